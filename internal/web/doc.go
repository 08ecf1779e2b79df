// Package web serves gpumem over HTTP: a JSON API whose responses are the
// JSON the command line prints with --format json, and an embedded page
// (plain HTML, JavaScript and CSS, no build step) that drives it.
//
// # Routes
//
//	GET  /api/estimate?model=llama3-8b&seq_len=4096   memory.Result, as gpumem estimate --format json
//	POST /api/estimate {"model": "llama3-8b", "seq_len": 4096, ...}
//	GET  /api/params?model=llama3-8b                  report.ParamsReport, as gpumem params --format json
//	GET  /api/models?filter=qwen                      the catalog, as gpumem models --format json
//	GET  /api/gpus?filter=h100                        the GPU catalog, as gpumem gpus --format json
//	GET  /api/optimizers                              the optimizers, as gpumem optimizers --format json
//	GET  /api/plan, POST /api/plan                    [PlanReport]: fit, largest batch and sequence per GPU
//	GET  /                                            the page
//
// Answers are compact JSON followed by a newline. The query key pretty
// (?pretty, ?pretty=1) asks for the indented JSON instead, which is byte
// for byte what the command prints with --format json.
//
// Query keys are the JSON names of [memory.Job] fields (seq_len,
// per_device_batch, method, ...); dashes are accepted for underscores, so
// seq-len works too. A POST body is a job file in JSON, read by
// [jobfile.ParseJSON], the parser of gpumem estimate --config: the same
// keys (in any case, with dashes or underscores), human sizes
// ("gpu_memory": "80GiB", "trainable_params": "1.2M"), a size-only model
// and the engine-calculator layout, so a body estimates exactly as the
// file does. /api/plan takes a "gpus" array besides.
//
// # Errors
//
// Bad input is answered with HTTP 400 and a JSON body
// {"error": "...", "field": "..."} naming the offending key. A POST body
// with problems gets every one of them, in "problems" and in the message,
// as gpumem validate lists those of a job file; field is then the
// top-level key of the first. A body over
// the limit gets 413, an unknown route 404 and a wrong method 405, all
// with the same JSON shape. A panic in a handler becomes a 500 with a
// generic message and a log line; stack traces never reach the client.
//
// # Hardening
//
// [NewHTTPServer] sets read, write and idle timeouts; [Serve] shuts down
// gracefully when its context ends. Responses carry a Content-Security-Policy
// that allows only the server's own origin, X-Content-Type-Options: nosniff
// and no CORS headers, and cross-origin browser POSTs are rejected. With
// [Options].AllowedHosts set (gpumem serve sets [LoopbackHosts] on a
// loopback address), requests naming another host get 403, so a site
// whose name resolves to 127.0.0.1 cannot read the API (DNS rebinding).
//
// # Speed
//
// An estimate takes microseconds; the server answers more than 10,000
// estimates a second on two cores over loopback (see the load test).
// Catalog models are parsed once and kept; results are encoded without
// reflection by report's generated encoder into pooled buffers; the
// access log is off unless [Options].AccessLog asks for every request or
// a sample. /api/plan answers for catalog models are kept in a bounded
// LRU ([DefaultPlanCacheSize]) keyed by model, job and GPUs, and a plan
// whose request ends (the client left, a deadline passed) stops at its
// next estimate ([plan.WithContext]) with a 503, and is not kept.
package web
