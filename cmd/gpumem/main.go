// Command gpumem estimates the GPU memory of LLM/VLM training, fine-tuning,
// inference and serving jobs from a model's config.json.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/gpumem/gpumem/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.SystemFactory())
	stop()
	os.Exit(code)
}
