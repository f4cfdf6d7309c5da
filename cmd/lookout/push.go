package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/lookout-dev/lookout/client"
	"github.com/lookout-dev/lookout/internal/formats"
	"github.com/lookout-dev/lookout/internal/formats/decoding"
	"github.com/lookout-dev/lookout/internal/trace"
)

// serverFlags are the flags of commands that talk to a server.
type serverFlags struct {
	server, apiKey string
}

// defaultServer is where client commands go without --server or
// $LOOKOUT_SERVER: the address lookout serve listens on by default.
const defaultServer = "http://127.0.0.1:8000"

func (f *serverFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.server, "server", "", "Lookout server URL, such as http://127.0.0.1:8000 (default $LOOKOUT_SERVER, else "+defaultServer+"; http:// is assumed without a scheme)")
	cmd.Flags().StringVar(&f.apiKey, "api-key", "", "API key (default $LOOKOUT_API_KEY; none needed for a local-mode server)")
}

// serverURL is --server, else $LOOKOUT_SERVER, else the default address.
func (f *serverFlags) serverURL() string {
	if f.server != "" {
		return f.server
	}
	if s := os.Getenv("LOOKOUT_SERVER"); s != "" {
		return s
	}
	return defaultServer
}

// dataset connects to the server and finds the dataset name there (the
// caller's own, else the one public dataset of that name).
func (f *serverFlags) dataset(cmd *cobra.Command, name string) (*client.Client, context.Context, client.Dataset, error) {
	c, err := f.client()
	if err != nil {
		return nil, nil, client.Dataset{}, err
	}
	ctx := cmdContext(cmd)
	d, err := c.FindDataset(ctx, name)
	return c, ctx, d, err
}

func (f *serverFlags) client() (*client.Client, error) {
	key := f.apiKey
	if key == "" {
		key = os.Getenv("LOOKOUT_API_KEY")
	}
	return client.New(f.serverURL(), client.WithAPIKey(key), client.WithUserAgent("lookout-cli"))
}

func newPushCmd() *cobra.Command {
	var sf serverFlags
	var dataset, formatName, onConflict string
	var batch int
	cmd := &cobra.Command{
		Use:   "push --server URL [--api-key K] --dataset NAME [--on-conflict fail|skip|append] FILE...",
		Short: "Push trace files to a Lookout server",
		Long: `push reads each FILE ("-" for standard input) in any format Lookout reads and
stores its traces in the dataset NAME on the server (created on first push),
streaming them in batches; each acknowledged batch is stored for good. A
dataset metadata line in a file is merged into the dataset's metadata.

A trace the importer rejects is reported on standard error with its place
and skipped. A progress bar is drawn on standard error when it is a terminal;
a summary line ends the output on standard output.

A trace whose "index" the dataset already holds (the same Explorer file
pushed twice, or two files with the same indexes) is dealt with as
--on-conflict says: fail (the default) stops the push there, naming the
trace by file and line; skip leaves it out and reports it; append stores it
with an index after the last one and reports it.

Exit status: 0 when every trace was stored (or skipped or given a new index
as --on-conflict asked); 1 when a trace was rejected (by the importer or the
server, a taken index with --on-conflict fail included); 2 on usage errors,
unreadable files and server or connection failures.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := formats.Parse(formatName)
			if err != nil {
				return err
			}
			if err := validateDatasetName(dataset); err != nil {
				return err
			}
			switch onConflict {
			case client.ConflictFail, client.ConflictSkip, client.ConflictAppend:
			default:
				return fmt.Errorf("--on-conflict must be fail, skip or append, not %q", onConflict)
			}
			c, err := sf.client()
			if err != nil {
				return err
			}
			return runPush(cmd.Context(), c, pushOptions{dataset: dataset, format: f, batch: batch, onConflict: onConflict}, args, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&dataset, "dataset", "", "dataset to push into (created on first push)")
	cmd.Flags().StringVar(&formatName, "format", "auto", formatFlagHelp())
	cmd.Flags().IntVar(&batch, "batch", 500, "traces per request")
	cmd.Flags().StringVar(&onConflict, "on-conflict", client.ConflictFail, "a trace whose index the dataset holds: fail (stop the push), skip (leave it out) or append (give it an index after the last)")
	_ = cmd.MarkFlagRequired("dataset")
	return cmd
}

func validateDatasetName(name string) error {
	if name == "" {
		return errors.New("--dataset must not be empty")
	}
	return nil
}

// pushOptions are push's flags.
type pushOptions struct {
	dataset    string
	format     formats.Format
	batch      int
	onConflict string
}

func runPush(ctx context.Context, c *client.Client, opt pushOptions, files []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	dataset, f := opt.dataset, opt.format
	start := time.Now()
	var total int64
	for _, name := range files {
		if name == "-" {
			total = -1
			break
		}
		if fi, err := os.Stat(name); err == nil {
			total += fi.Size()
		}
	}
	bar := newProgress(stderr, total)
	var pushedBytes int64
	skipped, moved := 0, 0
	pusher := c.NewPusher(ctx, dataset, client.PusherOptions{
		BatchTraces: opt.batch,
		OnBatch:     func(_ int, n int64) { pushedBytes += n },
		OnConflict:  opt.onConflict,
		Conflict: func(place string, index, newIndex int64) {
			bar.clear()
			if newIndex < 0 {
				skipped++
				fmt.Fprintf(stderr, "%s: index %d is taken in dataset %q: skipped\n", place, index, dataset)
			} else {
				moved++
				fmt.Fprintf(stderr, "%s: index %d is taken in dataset %q: stored as index %d\n", place, index, dataset, newIndex)
			}
		},
	})
	rejected, sent, unreadable := 0, 0, false
	var metas [][]byte
	var pushErr error
	for _, name := range files {
		in, err := openCounted(name, stdin, f, bar)
		if err != nil {
			bar.clear()
			fmt.Fprintln(stderr, err)
			if badInput(err) {
				rejected++ // a file in no readable format is invalid input
			} else {
				unreadable = true
			}
			continue
		}
		placer, _ := in.dec.(decoding.Placer)
		nth := 0
		err = in.each(func(t *trace.Trace) error {
			sent++
			nth++
			// The trace's place in the input, for the server's word on it.
			place := fmt.Sprintf("%s: trace %d", name, nth)
			if placer != nil {
				if line, col := placer.Place(); line > 0 {
					place = fmt.Sprintf("%s:%d:%d", name, line, col)
				}
			}
			return pusher.AddPlaced(trace.AppendTrace(nil, t), place)
		}, func(err error) {
			bar.clear()
			fmt.Fprintln(stderr, err)
			rejected++
		})
		if m := in.dec.DatasetMetadata(); len(m) > 0 && string(m) != "{}" {
			metas = append(metas, m)
		}
		if err != nil {
			pushErr = err
			break
		}
	}
	if err := pusher.Close(); err != nil && pushErr == nil {
		pushErr = err
	}
	bar.finish()
	stored := len(pusher.IDs())
	if pushErr == nil && len(metas) > 0 {
		pushErr = mergeDatasetMetadata(ctx, c, dataset, metas)
	}
	took := time.Since(start)
	rate := float64(stored) / took.Seconds()
	summary := fmt.Sprintf("pushed %s (%s) from %s to dataset %q in %s (%.0f traces/s); %d rejected",
		plural(stored, "trace"), humanBytes(pushedBytes), plural(len(files), "file"), dataset, took.Round(time.Millisecond), rate, rejected)
	if skipped > 0 {
		summary += fmt.Sprintf("; %d skipped (index taken)", skipped)
	}
	if moved > 0 {
		summary += fmt.Sprintf("; %d given new indexes (theirs were taken)", moved)
	}
	if unstored := sent - stored - skipped; pushErr != nil && unstored > 0 {
		// Read and sent, but in or after a batch the server refused.
		summary += fmt.Sprintf("; %d not stored (the push stopped: see below)", unstored)
	}
	fmt.Fprintln(stdout, summary)
	var pe *client.PushError
	if errors.As(pushErr, &pe) && pe.Err.Status == http.StatusConflict {
		fmt.Fprintf(stderr, "%s: index %d is taken (dataset %q or an earlier trace of this push has it): the push stopped, and this trace's batch was not stored; --on-conflict skip or append stores such traces\n", pe.Place, pe.Index, dataset)
		return exitError{exitFound}
	}
	if pushErr != nil {
		fmt.Fprintf(stderr, "lookout: push stopped: %v\n", pushErr)
		var ae *client.Error
		if errors.As(pushErr, &ae) && (ae.Status == http.StatusUnprocessableEntity || ae.Status == http.StatusBadRequest || ae.Status == http.StatusConflict || ae.Status == http.StatusRequestEntityTooLarge) {
			return exitError{exitFound} // the server rejected traces
		}
		return exitError{exitInternal}
	}
	if unreadable {
		return exitError{exitInternal}
	}
	if rejected > 0 {
		return exitError{exitFound}
	}
	return nil
}

// mergeDatasetMetadata merges the files' dataset metadata lines into the
// dataset.
func mergeDatasetMetadata(ctx context.Context, c *client.Client, dataset string, metas [][]byte) error {
	d, err := c.FindDataset(ctx, dataset)
	var ce *client.Error
	if errors.As(err, &ce) && ce.Status == http.StatusNotFound {
		// Only metadata, no traces: the dataset is made, as a push of
		// traces would have made it.
		d, err = c.CreateDataset(ctx, dataset, false, nil)
	}
	if err != nil {
		return err
	}
	for _, m := range metas {
		if _, err := c.SetMetadata(ctx, d.ID, m, false); err != nil {
			return err
		}
	}
	return nil
}

// openCounted is openInput with the bytes read reported to the progress bar.
func openCounted(name string, stdin io.Reader, f formats.Format, bar *progress) (*input, error) {
	return openWrapped(name, stdin, f, func(r io.Reader) io.Reader { return &countingReader{r: r, bar: bar} })
}

type countingReader struct {
	r   io.Reader
	bar *progress
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.bar.add(n)
	return n, err
}

// progress is a progress bar on a terminal, and nothing otherwise.
type progress struct{ bar *progressbar.ProgressBar }

func newProgress(w io.Writer, total int64) *progress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return &progress{}
	}
	return &progress{bar: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("pushing"),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

func (p *progress) add(n int) {
	if p.bar != nil && n > 0 {
		p.bar.Add(n)
	}
}

func (p *progress) clear() {
	if p.bar != nil {
		p.bar.Clear()
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
