// Package modelref resolves a model reference — what a user types after
// --model, writes in a job file or sends to the API — to the model's
// config.json and its [model.Model].
//
// # References
//
// A reference is one of:
//
//   - a catalog id or alias: "meta-llama/Llama-3.1-8B", "llama3.1-8b"
//     (the configs embedded in package model, read offline);
//   - a path on this machine: a config.json, or a model folder holding one
//     (and preprocessor_config.json for a VLM's image size), including a
//     snapshot folder of the Hugging Face cache;
//   - a Hub id, "org/name" or "org/name@revision", fetched from the Hub or
//     read from the local Hub cache through a [HubClient] (a [*hub.Client]).
//
// [Locate] decides which one a reference names, and [Resolve] reads it.
// Both go through the same decision, so what is refused is exactly what
// would be read: a reference spelt as a path ("./m", "/mnt/m",
// "m/config.json", "a/b/c") is always a path, and is refused without
// looking at the disk unless [Options.LocalPaths] is set; a name ("m",
// "org/name", "org/name@rev") is looked up on the disk only when local
// paths are allowed, and otherwise is a catalog name or a Hub id, so a
// caller that refuses paths answers the same whether or not such a file
// exists.
//
// # Stand-ins
//
// Unless [Options.Exact] is set, [Resolve] stands in for a model it
// cannot read, and says so in a note ([Source.Notes], also appended to
// [model.Model.Warnings] so that every output carries it):
//
//   - a release of a catalog model ("-Instruct", "-chat", "-it", "-Base",
//     "-pt", "-hf", a release date) that the Hub cannot supply (offline,
//     unreachable, or no Hub given) is read as that catalog model
//     ([model.VariantOf]);
//   - a path that does not exist here, as training configs often name
//     ("/mnt/models/Qwen2-7B-Instruct"), is read by its last component:
//     the catalog model of that name, else the Hub repository of that name
//     under the organisation that publishes the catalog's models of that
//     family ([model.PublisherOf]), else a catalog release as above. A
//     path into a Hugging Face cache names its repository and commit.
//
// Names that match nothing fail with an error wrapping
// [model.ErrNotFound] that names the closest catalog models; a Hub that
// cannot be reached is reported in those words, without the network
// error's details.
//
// # Checkpoints
//
// With [Options.Checkpoint], [Resolve] also reads the safetensors headers
// of a model folder or a Hub repository (by Range requests through a
// [HubFiles], or from the Hub cache) into [Source.Checkpoint], and notes
// a stored parameter count that differs from config.json's with both
// figures. It is off by default, so that resolving a catalog model or a
// config.json stays offline and takes microseconds.
//
// # Usage
//
//	c, err := hub.New(hub.Config{CacheDir: hub.CacheDirFor(hfHome), Offline: true})
//	if err != nil {
//		return err
//	}
//	src, err := modelref.Resolve(ctx, "Qwen/Qwen3-8B", modelref.Options{Hub: c, LocalPaths: true})
//	if err != nil {
//		return err
//	}
//	fmt.Println(src.Kind, src.Model.TotalParams(), src.Notes)
package modelref
