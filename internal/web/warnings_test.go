package web_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpumem/gpumem/internal/web"
	"github.com/gpumem/gpumem/model"
)

// TestAPIGenericWarning checks that the warning of a generic reading is
// the first of the top-level warnings of /api/estimate (which the page
// lists), /api/plan and /api/params, whatever model reference the server
// resolves.
func TestAPIGenericWarning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	cfg := `{"model_type": "frobnet", "architectures": ["FrobForCausalLM"], "hidden_size": 2048, "num_hidden_layers": 8,
		"num_attention_heads": 16, "intermediate_size": 8192, "vocab_size": 32000, "max_position_embeddings": 4096}`
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	h := web.New(web.Options{Resolve: func(_ context.Context, ref string) (*model.Model, error) {
		return model.Load(ref)
	}}).Handler()
	m := url.QueryEscape(path)
	for _, target := range []string{
		"/api/estimate?model=" + m + "&seq_len=512",
		"/api/estimate?model=" + m + "&mode=inference&prompt_len=512",
		"/api/plan?model=" + m + "&seq_len=512&gpus=H100-SXM,L4",
		"/api/params?model=" + m,
	} {
		t.Run(target, func(t *testing.T) {
			rec := serve(h, httptestRequest("GET", target, ""))
			if rec.Code != 200 {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			var top struct {
				Warnings []string `json:"warnings"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &top); err != nil {
				t.Fatal(err)
			}
			if len(top.Warnings) == 0 || !strings.Contains(top.Warnings[0], model.GenericWarning) {
				t.Errorf("warnings %q, want the generic-reading warning first", top.Warnings)
			}
		})
	}
}
