// Package model turns a Hugging Face config.json into a [Model]: the shape
// of each transformer stack (layers, widths, heads, MoE, MLA, sliding
// windows, vision tower) and an exact inventory of its parameters, counted
// the way PyTorch's num_parameters() counts them (tied tensors once,
// buffers excluded), without loading any weights.
//
// # Reading configs
//
// [Parse] and [ParseFile] read config.json bytes; [ParseFS] reads a model
// folder from any fs.FS (config.json plus preprocessor_config.json when
// present); [Load] accepts a catalog id or alias, a config.json path or a
// folder (package modelref resolves Hub ids and the Hub cache as well).
// Each model_type (or architectures[0]) has a reader in its own
// file (llama.go, qwen_moe.go, deepseek.go, ...), chosen in registry.go;
// legacy key spellings (n_embd, n_layer, n_head_kv, d_model, ...) are
// resolved in one table in config.go, and keys a config leaves out take
// the defaults of the family's transformers configuration class. An
// unknown model_type is read as a generic Llama-style decoder, with a
// warning in [Model.Warnings] (starting [GenericWarning]), only when the
// config holds the dense keys and nothing that reading does not understand
// and that changes the size (experts, recurrent or hybrid layers, latent
// attention, sub-configs, other MLP, norm or bias kinds); otherwise it is
// an error wrapping [ErrUnsupportedArchitecture] that names the keys and
// the closest supported families. Hybrid models list a kind per layer
// ([LayerType.State] for linear-attention and SSM layers, whose
// per-sequence state [Stack.State] describes). Bad values are
// a [*ConfigError] naming the file, the key and what was expected:
//
//	config.json: num_attention_heads: want a positive integer, got -3
//
// # Counting parameters
//
// [Model.Modules] lists every group of identical parameter tensors (one
// module kind repeated over layers and experts) with its component,
// stack, instance count and, for Linears, in/out features and a PEFT-style
// short name. [Model.TotalParams], [Model.ActiveParams],
// [Model.ByComponent], [Model.Linears], [Model.MatchLinears] and
// [Model.LayerParams] are sums over it.
//
// # Catalog
//
// The real config.json of about ninety models is embedded. [Catalog]
// lists them; [Lookup] finds one by Hub id (case-insensitive) or short
// alias such as "llama3.1-8b" (aliases.go).
//
//	m, err := model.Load("llama2-7b")
//	if err != nil {
//		return err
//	}
//	fmt.Println(m.TotalParams()) // 6738415616
package model
