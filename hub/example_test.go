package hub_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpumem/gpumem/hub"
)

// ExampleClient_FetchConfig fetches a model's config.json into a Hub
// cache folder, then reads it again offline. A local server stands in
// for the Hub.
func ExampleClient_FetchConfig() {
	const commit = "1111111111111111111111111111111111111111"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Repo-Commit", commit)
		if strings.HasSuffix(r.URL.Path, "/resolve/main/config.json") {
			http.ServeContent(w, r, "config.json", time.Time{}, strings.NewReader(`{"model_type":"llama"}`))
			return
		}
		w.Header().Set("X-Error-Code", "EntryNotFound")
		http.Error(w, "entry not found", http.StatusNotFound)
	}))
	defer srv.Close()
	cache, _ := os.MkdirTemp("", "hub-example")
	defer os.RemoveAll(cache)

	ctx := context.Background()
	ref, _ := hub.ParseRef("org/model@main")
	online, _ := hub.New(hub.Config{Endpoint: srv.URL, CacheDir: cache})
	snap, err := online.FetchConfig(ctx, ref)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(snap.Commit == commit, string(snap.Files[hub.ConfigFile]))

	offline, _ := hub.New(hub.Config{CacheDir: cache, Offline: true})
	snap, err = offline.FetchConfig(ctx, ref)
	fmt.Println(string(snap.Files[hub.ConfigFile]), err)
	_, err = os.Stat(filepath.Join(cache, "models--org--model", "refs", "main"))
	fmt.Println("refs/main cached:", err == nil)
	// Output:
	// true {"model_type":"llama"}
	// {"model_type":"llama"} <nil>
	// refs/main cached: true
}
