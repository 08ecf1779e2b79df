// Package hub reads models from the Hugging Face Hub and from the local
// Hub cache that transformers and the Hugging Face CLI share.
//
// There is no official Go client; this one uses net/http and the same
// URLs, headers and cache layout as the huggingface_hub Python library:
//
//   - files are downloaded from {endpoint}/{repo}/resolve/{revision}/{file};
//     large (LFS) files redirect to a CDN, and the Hub's X-Repo-Commit,
//     X-Linked-Etag and X-Linked-Size headers name the commit, the blob
//     and the size;
//   - the cache lives in $HF_HUB_CACHE (default $HF_HOME/hub) as
//     models--org--name/{refs,snapshots,blobs}, described at [Cache].
//
// # Configuration
//
// [Config] carries the endpoint (HF_ENDPOINT), the token (HF_TOKEN or the
// token file, see [TokenFile]), the cache folder and offline mode
// (HF_HUB_OFFLINE). The caller reads the environment and fills it; this
// package never reads environment variables. The token is a [Secret]: it
// never prints, is sent only to the endpoint's host (not to the CDN), and
// is scrubbed from every error message.
//
// # Reading models
//
// [Client.FetchConfig] fetches config.json (and preprocessor_config.json
// when present) and writes them to the cache, so a later run works
// offline. [Client.Open] returns a [File], an [io.ReaderAt] whose reads
// are HTTP Range requests, so the safetensors and GGUF parsers can read
// weight headers without downloading the weights. [Client.Get] reads any
// small file, and [Client.Info] resolves a revision to its commit and
// lists the repository's files.
//
// # Errors and retries
//
// A 429 or 5xx answer or a network error is retried with exponential
// backoff, honouring Retry-After; a host name that does not resolve is
// not retried. Failures wrap [ErrGated] (accept the license and set
// HF_TOKEN), [ErrUnauthorized] (the token was rejected), [ErrNotFound]
// (no such model, revision or file; a missing file also matches
// fs.ErrNotExist), [ErrUnreachable] (no answer: no network, an unknown
// host, a refused connection, a timeout) or [ErrOffline]; [StatusError]
// has the details of an answer.
//
// Usage:
//
//	c, err := hub.New(hub.Config{Token: hub.Secret(os.Getenv("HF_TOKEN")), CacheDir: dir})
//	if err != nil {
//		return err
//	}
//	ref, err := hub.ParseRef("Qwen/Qwen3-8B@main")
//	if err != nil {
//		return err
//	}
//	snap, err := c.FetchConfig(ctx, ref)
package hub
