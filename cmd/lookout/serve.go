package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lookout-dev/lookout/internal/eval"
	"github.com/lookout-dev/lookout/internal/gctune"
	"github.com/lookout-dev/lookout/internal/server"
	"github.com/lookout-dev/lookout/internal/usage"
)

func newServeCmd() *cobra.Command {
	var addr, db, maxBody, llmURL, llmModel, otlpGRPC, pricesFile string
	var trustedProxies []string
	var gw server.GatewayConfig
	var quiet, noBackground bool
	var evalConc int
	var cpuProfile string
	var keyCacheTTL, runLease time.Duration
	var df detectorFlags
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:8000] [--db PATH|postgres://...] [--max-body 64MiB]",
		Short: "Serve the Lookout API (and keep traces in a SQLite file or PostgreSQL)",
		Long: `serve runs Lookout's HTTP API under /api/v1 on --addr (loopback by default).

The database is a SQLite file (default lookout.db, created if missing) or a
postgres:// URL; migrations run at start. While the database has no users the
server is in local mode: requests from this machine need no key. Once a user
exists (lookout user create), every write needs an API key or a login.

A trace acknowledged with a 2xx answer is committed to the database first.
Request bodies above --max-body get 413. SIGINT or SIGTERM stop the server
gracefully. The first line on standard error names the address served.

--detector-endpoint and --detector-model give the model-backed detectors
(prompt_injection, moderated, pii's named entities, llm, llm_confirm) an
OpenAI-compatible endpoint (key in $LOOKOUT_DETECTOR_API_KEY) for every
policy the server checks; --llm-url is the judge of llm criteria.

Several servers may share one PostgreSQL database (README, "Run several
replicas"); --no-background makes one that only answers requests.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			limit, err := server.ParseSize(maxBody)
			if err != nil {
				return fmt.Errorf("--max-body: %w", err)
			}
			model, err := df.detectorModel()
			if err != nil {
				return err
			}
			prices := usage.Default()
			if pricesFile != "" {
				if prices, err = usage.Load(pricesFile); err != nil {
					return fmt.Errorf("--prices: %w", err)
				}
			}
			proxies, err := server.ParseTrustedProxies(trustedProxies)
			if err != nil {
				return fmt.Errorf("--trusted-proxy: %w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			stderr := cmd.ErrOrStderr()
			if cpuProfile != "" {
				stopProfile, err := startCPUProfile(cpuProfile)
				if err != nil {
					return fmt.Errorf("--cpuprofile: %w", err)
				}
				defer stopProfile()
			}
			if noBackground {
				// The store's indexer loop stays off, the other servers
				// run it (its searches still index their own dataset
				// first): the switch the store reads.
				os.Setenv("LOOKOUT_INDEXER", "elsewhere")
			}
			st, err := openStore(ctx, db)
			if err != nil {
				return fmt.Errorf("opening database %s: %w", redactDB(db), err)
			}
			defer st.Close()
			level := slog.LevelInfo
			if quiet {
				level = slog.LevelWarn
			}
			logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
			if gc := gctune.Apply(); gc != (gctune.Settings{}) {
				logger.Debug("garbage collector set", "gogc", gc.Percent, "memory_limit_bytes", gc.Limit)
			}
			cfg := server.Config{Store: st, Logger: logger, MaxBody: limit, EvalConcurrency: evalConc, Gateway: gw, DetectorModel: model, TrustedProxies: proxies, Prices: prices,
				NoBackground: noBackground, KeyCacheTTL: keyCacheTTL, RunLease: runLease}
			if llmURL != "" {
				cfg.LLM = &eval.LLM{URL: llmURL, Model: llmModel, APIKey: os.Getenv("LOOKOUT_LLM_API_KEY")}
			}
			srv := server.New(cfg)
			// Runs and span builds an earlier server left unfinished go on.
			defer srv.Close()
			if err := srv.Start(ctx); err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return err
			}
			users, err := st.CountUsers(ctx)
			if err != nil {
				return err
			}
			mode := "local mode: requests from this machine need no key"
			if users > 0 {
				mode = "writes need an API key or a login"
			}
			fmt.Fprintf(stderr, "lookout: serving http://%s (database %s; %s)\n", ln.Addr(), redactDB(db), mode)
			if model != nil {
				fmt.Fprintf(stderr, "lookout: model-backed detectors ask %s\n", model)
			}
			if otlpGRPC != "" {
				gln, err := net.Listen("tcp", otlpGRPC)
				if err != nil {
					return fmt.Errorf("--otlp-grpc: %w", err)
				}
				var protocols http.Protocols
				protocols.SetUnencryptedHTTP2(true) // gRPC without TLS, as OTLP exporters send it locally
				gs := &http.Server{Handler: srv.OTLPGRPC(), Protocols: &protocols, ReadHeaderTimeout: 10 * time.Second,
					ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn), BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
				go gs.Serve(gln)
				defer func() {
					sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					gs.Shutdown(sctx)
				}()
				fmt.Fprintf(stderr, "lookout: OTLP/gRPC on %s\n", gln.Addr())
			}
			hs := &http.Server{
				Handler:           srv,
				ReadHeaderTimeout: 10 * time.Second,
				IdleTimeout:       2 * time.Minute,
				ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
				BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
			}
			done := make(chan error, 1)
			go func() { done <- hs.Serve(ln) }()
			select {
			case err := <-done:
				return err
			case <-ctx.Done():
			}
			fmt.Fprintln(stderr, "lookout: shutting down")
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := hs.Shutdown(sctx); err != nil {
				return err
			}
			if err := <-done; !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8000", "address to listen on (host:port; port 0 picks a free one)")
	cmd.Flags().StringVar(&db, "db", defaultDB, dbFlagHelp)
	cmd.Flags().StringVar(&maxBody, "max-body", "64MiB", "largest request body accepted (413 past it)")
	cmd.Flags().StringSliceVar(&trustedProxies, "trusted-proxy", nil, "address or CIDR of a reverse proxy whose X-Forwarded-Proto, X-Forwarded-For and Forwarded headers are believed (repeatable; session cookies are then Secure behind its HTTPS)")
	cmd.Flags().StringVar(&gw.OpenAIURL, "gateway-openai-url", server.DefaultOpenAIURL, "where the gateway sends OpenAI calls (/api/v1/gateway/{dataset}/openai/...; any OpenAI-compatible server, such as vLLM or Ollama's /v1)")
	cmd.Flags().StringVar(&gw.AnthropicURL, "gateway-anthropic-url", server.DefaultAnthropicURL, "where the gateway sends Anthropic calls (/api/v1/gateway/{dataset}/anthropic/...)")
	cmd.Flags().StringVar(&gw.GeminiURL, "gateway-gemini-url", server.DefaultGeminiURL, "where the gateway sends Gemini calls (/api/v1/gateway/{dataset}/gemini/...)")
	cmd.Flags().DurationVar(&gw.CheckTimeout, "gateway-check-timeout", 5*time.Second, "longest guardrail check of one gateway call (a blocking policy that runs out of time refuses the call)")
	cmd.Flags().StringVar(&llmURL, "llm-url", "", "OpenAI-compatible endpoint of the judge of llm criteria (such as https://api.openai.com/v1; key in $LOOKOUT_LLM_API_KEY)")
	cmd.Flags().StringVar(&llmModel, "llm-model", "gpt-4o-mini", "model of the llm judge")
	cmd.Flags().IntVar(&evalConc, "eval-concurrency", 4, "traces an evaluation run grades at once")
	cmd.Flags().BoolVar(&quiet, "quiet", false, "log warnings and errors only, not every request")
	cmd.Flags().BoolVar(&noBackground, "no-background", false, "answer requests only: leave building traces from spans, the search index's loop and evaluation runs an earlier server left to the other servers on the same PostgreSQL database")
	df.add(cmd)
	// For benchmarks (bench/peers -cpuprofile): the profile is written when the server stops.
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the server's run to this file")
	cmd.Flags().MarkHidden("cpuprofile")
	// For tests of revocation across servers: a cache that would outlast them.
	cmd.Flags().DurationVar(&keyCacheTTL, "key-cache-ttl", 0, "how long an API key seen is trusted without a look in the database (0: a second)")
	cmd.Flags().MarkHidden("key-cache-ttl")
	cmd.Flags().DurationVar(&runLease, "run-lease", 0, "how long a server's claim on an evaluation run lasts unrenewed: a run whose server died is taken by another within about 1.5 times this (0: 30s)")
	cmd.Flags().MarkHidden("run-lease")
	cmd.Flags().StringVar(&pricesFile, "prices", "", "a model price file (JSON, the shape of internal/usage/prices.json) whose models replace or add to the built-in table that estimates costs the sources did not record")
	cmd.Flags().StringVar(&otlpGRPC, "otlp-grpc", "", "also receive OpenTelemetry traces over OTLP/gRPC on this address (such as 127.0.0.1:4317; off by default)")
	return cmd
}

func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
