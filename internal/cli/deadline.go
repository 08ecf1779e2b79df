package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// DefaultTimeout is the longest a command may take unless --timeout or
// GPUMEM_TIMEOUT says otherwise. An estimate from the catalog or a local
// file takes milliseconds; the deadline exists for the Hub, whose every
// request is also bounded on its own (HF_HUB_DOWNLOAD_TIMEOUT, 10 s, with
// retries): a Hub answering a byte a second kept a command waiting 44 s,
// and a checkpoint of many shards could wait that long for each.
const DefaultTimeout = 30 * time.Second

// timeoutEnv names the environment variable that sets --timeout.
const timeoutEnv = "GPUMEM_TIMEOUT"

// noDeadline lists the commands the overall deadline does not apply to:
// serve runs until stopped and bounds each request instead
// (--request-timeout).
var noDeadline = map[string]bool{"serve": true}

// DeadlineError is the cause of a command stopped by its deadline. It
// wraps context.DeadlineExceeded.
type DeadlineError struct {
	// Timeout is the deadline that passed.
	Timeout time.Duration
}

// Error says what stopped and how to allow more time.
func (e *DeadlineError) Error() string {
	return fmt.Sprintf("gave up after %s, the command's deadline (the Hub answered too slowly); allow more with --timeout or %s (0 for none)", e.Timeout, timeoutEnv)
}

// Unwrap returns context.DeadlineExceeded.
func (e *DeadlineError) Unwrap() error { return context.DeadlineExceeded }

// addTimeoutFlag declares --timeout on the root command's persistent flags.
func addTimeoutFlag(fs *pflag.FlagSet, g *globalOptions) {
	fs.DurationVar(&g.Timeout, "timeout", DefaultTimeout, "the longest a command may take, e.g. 90s or 5m; 0 for no limit (env "+timeoutEnv+"; each Hub request is also bounded by HF_HUB_DOWNLOAD_TIMEOUT)")
}

// applyDeadline gives cmd's context the command's deadline: --timeout,
// else GPUMEM_TIMEOUT, else DefaultTimeout. The context is cancelled
// when Main's is (Main cancels it on return), which releases its timer.
func applyDeadline(cmd *cobra.Command, f *Factory, g *globalOptions) error {
	if noDeadline[cmd.Name()] {
		return nil
	}
	d := g.Timeout
	if fl := cmd.Flags().Lookup("timeout"); (fl == nil || !fl.Changed) && f.Getenv != nil {
		if v := strings.TrimSpace(f.Getenv(timeoutEnv)); v != "" {
			var err error
			if d, err = parseTimeout(v); err != nil {
				return &UsageError{Err: fmt.Errorf("%s=%q: %w", timeoutEnv, v, err)}
			}
		}
	} else if d < 0 {
		return usageErrorf("--timeout %s: want a duration of 0 (no limit) or more", d)
	}
	if d == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeoutCause(cmd.Context(), d, &DeadlineError{Timeout: d})
	g.cancelDeadline = cancel
	cmd.SetContext(ctx)
	return nil
}

// parseTimeout reads a duration ("90s", "5m") or a number of seconds.
func parseTimeout(v string) (time.Duration, error) {
	bad := errors.New("want a duration such as 90s or 5m, or 0 for no limit")
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return 0, bad
		}
		return d, nil
	}
	secs, err := strconv.ParseFloat(v, 64)
	if err != nil || !(secs >= 0 && secs <= maxTimeoutSeconds) { // false for NaN
		return 0, bad
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// maxTimeoutSeconds bounds a timeout given in seconds (a week), so that
// the conversion to a time.Duration cannot overflow.
const maxTimeoutSeconds = 7 * 24 * 3600
