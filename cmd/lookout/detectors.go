package main

import (
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/lookout-dev/lookout/internal/chat"
	"github.com/lookout-dev/lookout/internal/policy"
)

// detectorKeyEnv holds the key of the detector endpoint (never a flag, so
// that it stays out of process listings and shell history).
const detectorKeyEnv = "LOOKOUT_DETECTOR_API_KEY"

// detectorFlags configure the model that answers the model-backed
// detectors (prompt_injection, moderated, pii's named entities, llm,
// llm_confirm), on the commands that check policies.
type detectorFlags struct {
	endpoint, model string
	concurrency     int
}

func (f *detectorFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.endpoint, "detector-endpoint", "", "OpenAI-compatible endpoint that answers the model-backed detectors (such as http://127.0.0.1:11434/v1 for Ollama; key in $"+detectorKeyEnv+"); without it they fail as not available")
	cmd.Flags().StringVar(&f.model, "detector-model", "", "model of the detector endpoint (such as llama3.1)")
	cmd.Flags().IntVar(&f.concurrency, "detector-concurrency", 4, "requests to the detector endpoint in flight at once")
}

// detectorModel is the configured model, or nil when no endpoint is given.
func (f *detectorFlags) detectorModel() (*policy.DetectorModel, error) {
	if f.endpoint == "" {
		if f.model != "" {
			return nil, errors.New("--detector-model needs --detector-endpoint")
		}
		return nil, nil
	}
	if f.concurrency < 1 {
		return nil, errors.New("--detector-concurrency: want at least 1")
	}
	return policy.NewDetectorModel(policy.DetectorModelConfig{
		Endpoint:    chat.Endpoint{URL: f.endpoint, Model: f.model, APIKey: os.Getenv(detectorKeyEnv)},
		Concurrency: f.concurrency,
	})
}
