package gguf

import (
	"errors"
	"fmt"
	"sort"

	"github.com/gpumem/gpumem/units"
)

// Options are the run settings an inference estimate depends on, named
// after llama.cpp's flags. The zero value means llama.cpp's defaults
// with the model's full trained context.
type Options struct {
	// ContextSize is the number of KV-cache cells (--ctx-size), shared by
	// all parallel sequences; 0 means the model's context_length.
	ContextSize int
	// CacheTypeK and CacheTypeV are the KV-cache types (--cache-type-k,
	// --cache-type-v): f16 (default), bf16, f32, q8_0, q4_0, ...
	CacheTypeK, CacheTypeV string
	// UBatch is the physical batch size (--ubatch-size, default 512); a
	// sliding-window layer keeps window + UBatch cells.
	UBatch int
	// SWAFull keeps full-size caches on sliding-window layers (--swa-full).
	SWAFull bool
}

// defaultUBatch is llama.cpp's default n_ubatch (common/common.h).
const defaultUBatch = 512

// TypeTotal is the weight total of one tensor type.
type TypeTotal struct {
	Type     string `json:"type"`
	Tensors  int    `json:"tensors"`
	Elements int64  `json:"elements"`
	Bytes    int64  `json:"bytes"`
}

// Memory is the inference memory of a GGUF model with every layer
// offloaded to the GPU (llama.cpp -ngl 999): weights and KV cache.
type Memory struct {
	// Architecture is general.architecture and Name general.name.
	Architecture string `json:"architecture"`
	Name         string `json:"name,omitempty"`
	// Params is the element count of all tensors.
	Params int64 `json:"params"`
	// WeightsBytes is the exact size of all tensors as stored.
	WeightsBytes units.Bytes `json:"weights_bytes"`
	// WeightsByType splits the weights by ggml type, largest first.
	WeightsByType []TypeTotal `json:"weights_by_type"`
	// ContextSize is the number of KV cells and Layers the block count;
	// KVLayers counts the layers that keep a KV cache.
	ContextSize int `json:"context_size"`
	Layers      int `json:"layers"`
	KVLayers    int `json:"kv_layers"`
	// SWALayers counts the sliding-window (or chunked) layers and
	// SWACells the cells each of them keeps; 0 when none.
	SWALayers int `json:"swa_layers,omitempty"`
	SWACells  int `json:"swa_cells,omitempty"`
	// CacheTypeK and CacheTypeV are the KV-cache types used.
	CacheTypeK string `json:"cache_type_k"`
	CacheTypeV string `json:"cache_type_v"`
	// KCacheBytes, VCacheBytes and KVCacheBytes are the KV cache for
	// ContextSize cells over all layers.
	KCacheBytes  units.Bytes `json:"k_cache_bytes"`
	VCacheBytes  units.Bytes `json:"v_cache_bytes"`
	KVCacheBytes units.Bytes `json:"kv_cache_bytes"`
	// TotalBytes is WeightsBytes + KVCacheBytes.
	TotalBytes units.Bytes `json:"total_bytes"`
	// Notes say what is approximated or left out.
	Notes []string `json:"notes,omitempty"`
}

// Estimate returns the weights and KV cache of a GGUF model. Weights are
// the tensors' exact stored sizes. The KV cache follows llama.cpp's
// llama_kv_cache: per layer, a K tensor of ggml_row_size(type_k,
// n_embd_head_k·n_head_kv) bytes per cell and a V tensor likewise, for
// ContextSize cells (ggml-org/llama.cpp: src/llama-kv-cache.cpp; the
// per-token formula 2·L·k·d·bytes is MODEL.md §7.2).
func Estimate(f *File, opts Options) (*Memory, error) {
	arch := f.Architecture()
	if arch == "" {
		return nil, errors.New("gguf: general.architecture is missing")
	}
	m := &Memory{Architecture: arch}
	m.Name, _ = f.Metadata["general.name"].(string)
	m.weights(f.Tensors)
	if err := m.kvCache(f, opts); err != nil {
		return nil, fmt.Errorf("gguf %s: %w", arch, err)
	}
	m.TotalBytes = units.Add(m.WeightsBytes, m.KVCacheBytes)
	m.Notes = append(m.Notes, "compute buffers, the output buffer and the CUDA context are not included")
	return m, nil
}

// weights totals the tensors by type.
func (m *Memory) weights(tensors []TensorInfo) {
	by := map[string]*TypeTotal{}
	for _, t := range tensors {
		g := by[t.Type.String()]
		if g == nil {
			g = &TypeTotal{Type: t.Type.String()}
			by[g.Type] = g
		}
		g.Tensors++
		g.Elements = int64(units.Add(units.Bytes(g.Elements), units.Bytes(t.Elements)))
		g.Bytes = int64(units.Add(units.Bytes(g.Bytes), units.Bytes(t.Bytes)))
		m.Params = int64(units.Add(units.Bytes(m.Params), units.Bytes(t.Elements)))
		m.WeightsBytes = units.Add(m.WeightsBytes, units.Bytes(t.Bytes))
	}
	for _, g := range by {
		m.WeightsByType = append(m.WeightsByType, *g)
	}
	sort.Slice(m.WeightsByType, func(i, j int) bool {
		a, b := m.WeightsByType[i], m.WeightsByType[j]
		if a.Bytes != b.Bytes {
			return a.Bytes > b.Bytes
		}
		return a.Type < b.Type
	})
}

// maxContext bounds the context size (llama.cpp stores n_ctx in uint32).
const maxContext = 1 << 32

// kvCache fills the KV-cache fields.
func (m *Memory) kvCache(f *File, opts Options) error {
	arch := m.Architecture
	layers, ok := f.Uint(arch + ".block_count")
	if !ok || layers == 0 || layers > 100_000 {
		return fmt.Errorf("%s.block_count: missing or out of range", arch)
	}
	m.Layers = int(layers)
	if err := m.context(f, opts); err != nil {
		return err
	}
	tk, tv, err := cacheTypes(opts)
	if err != nil {
		return err
	}
	m.CacheTypeK, m.CacheTypeV = tk.String(), tv.String()
	kDims, vDims, err := headDims(f, m.Layers)
	if err != nil {
		return err
	}
	swa, err := m.slidingWindow(f, opts)
	if err != nil {
		return err
	}
	for il := range m.Layers {
		if kDims[il] == 0 && vDims[il] == 0 {
			continue
		}
		m.KVLayers++
		kRow, err := rowBytes(tk, int64(kDims[il]))
		if err != nil {
			return fmt.Errorf("layer %d K cache: %w", il, err)
		}
		vRow, err := rowBytes(tv, int64(vDims[il]))
		if err != nil {
			return fmt.Errorf("layer %d V cache: %w", il, err)
		}
		cells := int64(m.ContextSize)
		if swa != nil && swa[il] {
			cells = int64(m.SWACells)
		}
		m.KCacheBytes = units.Add(m.KCacheBytes, units.Bytes(units.MulInt(kRow, cells)))
		m.VCacheBytes = units.Add(m.VCacheBytes, units.Bytes(units.MulInt(vRow, cells)))
	}
	m.KVCacheBytes = units.Add(m.KCacheBytes, m.VCacheBytes)
	m.kvNotes(f)
	m.implausible(f)
	return nil
}

// implausibleKV is the KV-cache size past which the figure is flagged: a
// million-token context on the largest open models needs terabytes, not
// a pebibyte.
const implausibleKV = units.PiB

// implausible notes figures that follow from the file but no real model
// has, so that a corrupt or hand-made header is not taken at its word.
func (m *Memory) implausible(f *File) {
	arch := m.Architecture
	heads, _, err1 := f.Uints(arch+".attention.head_count", m.Layers)
	kvHeads, found, err2 := f.Uints(arch+".attention.head_count_kv", m.Layers)
	if err1 == nil && err2 == nil && found {
		for i := range min(len(heads), len(kvHeads)) {
			if kvHeads[i] > heads[i] {
				m.Notes = append(m.Notes, fmt.Sprintf("implausible: layer %d has more KV heads (%s.attention.head_count_kv %d) than attention heads (head_count %d); grouped-query attention shares KV heads among query heads, so real models have at most as many: the file may be corrupt", i, arch, kvHeads[i], heads[i]))
				break
			}
		}
	}
	if m.KVCacheBytes >= implausibleKV {
		m.Notes = append(m.Notes, fmt.Sprintf("implausible: the KV cache comes to %s (%d layers, %d cells); check %s.block_count, context_length and the head counts: the file may be corrupt", units.FormatIEC(m.KVCacheBytes), m.Layers, m.ContextSize, arch))
	}
}

// context picks the number of KV cells.
func (m *Memory) context(f *File, opts Options) error {
	trained, hasTrained := f.Uint(m.Architecture + ".context_length")
	switch {
	case opts.ContextSize < 0 || opts.ContextSize > maxContext:
		return fmt.Errorf("context size %d: want 1 to %d tokens", opts.ContextSize, maxContext)
	case opts.ContextSize > 0:
		m.ContextSize = opts.ContextSize
		if hasTrained && uint64(opts.ContextSize) > trained {
			m.Notes = append(m.Notes, fmt.Sprintf("context %d exceeds the trained context_length %d", opts.ContextSize, trained))
		}
	case !hasTrained || trained == 0 || trained > maxContext:
		return fmt.Errorf("%s.context_length: missing or out of range; pass a context size", m.Architecture)
	default:
		m.ContextSize = int(trained)
	}
	return nil
}

// cacheTypes parses the K and V cache types (default f16, as llama.cpp).
func cacheTypes(opts Options) (k, v Type, err error) {
	k, v = 1, 1 // F16
	if opts.CacheTypeK != "" {
		if k, err = ParseType(opts.CacheTypeK); err != nil {
			return 0, 0, fmt.Errorf("cache-type-k: %w", err)
		}
	}
	if opts.CacheTypeV != "" {
		if v, err = ParseType(opts.CacheTypeV); err != nil {
			return 0, 0, fmt.Errorf("cache-type-v: %w", err)
		}
	}
	return k, v, nil
}

// headDims returns, per layer, the K and V widths of one KV cell:
// n_embd_head_k·n_head_kv and n_embd_head_v·n_head_kv (llama.cpp
// llama_hparams::n_embd_k_gqa / n_embd_v_gqa). A layer with no KV heads
// (a recurrent layer of a hybrid model) keeps none. A file converted for
// multi-head latent attention (DeepSeek-V2/V3, marked by
// attention.key_length_mla) caches one head of the compressed latent and
// the RoPE key, key_length = kv_lora_rank + rope dims, and no V at all:
// llama.cpp's llama_kv_cache allocates V only when !hparams.is_mla()
// (src/llama-kv-cache.cpp; DeepSeek-V2, arXiv:2405.04434 §2.1; MODEL.md
// §7.2). Older DeepSeek files without that key run as plain multi-head
// attention and cache full K and V.
func headDims(f *File, layers int) (k, v []uint64, err error) {
	arch := f.Architecture()
	embd, ok := f.Uint(arch + ".embedding_length")
	if !ok || embd == 0 {
		return nil, nil, fmt.Errorf("%s.embedding_length: missing", arch)
	}
	heads, found, err := f.Uints(arch+".attention.head_count", layers)
	if err != nil || !found {
		return nil, nil, errors.Join(fmt.Errorf("%s.attention.head_count: missing or malformed", arch), err)
	}
	kvHeads, found, err := f.Uints(arch+".attention.head_count_kv", layers)
	if err != nil {
		return nil, nil, err
	}
	if !found {
		kvHeads = heads
	}
	keyLen, hasK := f.Uint(arch + ".attention.key_length")
	valLen, hasV := f.Uint(arch + ".attention.value_length")
	k, v = make([]uint64, layers), make([]uint64, layers)
	for i := range layers {
		if kvHeads[i] == 0 {
			continue
		}
		kd, vd := keyLen, valLen
		if (!hasK || !hasV) && heads[i] == 0 {
			return nil, nil, fmt.Errorf("layer %d has KV heads but no attention heads", i)
		}
		if !hasK {
			kd = embd / heads[i]
		}
		if !hasV {
			vd = embd / heads[i]
		}
		if kd > 1<<20 || vd > 1<<20 || kvHeads[i] > 1<<20 {
			return nil, nil, fmt.Errorf("layer %d: head sizes out of range", i)
		}
		k[i], v[i] = kd*kvHeads[i], vd*kvHeads[i]
		if isMLA(f) {
			v[i] = 0
		}
	}
	return k, v, nil
}

// isMLA reports whether the file runs with multi-head latent attention
// (llama_hparams::is_mla: attention.key_length_mla is set).
func isMLA(f *File) bool {
	n, ok := f.Uint(f.Architecture() + ".attention.key_length_mla")
	return ok && n > 0
}

// kvNotes records the approximations the KV figure makes.
func (m *Memory) kvNotes(f *File) {
	arch := m.Architecture
	if w, ok := f.Uint(arch + ".attention.sliding_window"); ok && w > 0 && m.SWALayers == 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("the layout of the sliding-window layers (window %d) of %s is not known here, so every layer is counted at the full context: an upper bound", w, arch))
	}
	if m.SWALayers > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("%d sliding-window layers keep %d cells each", m.SWALayers, m.SWACells))
	}
	if isMLA(f) {
		m.Notes = append(m.Notes, "multi-head latent attention: each cell caches the compressed KV latent and the RoPE key, with no separate V")
	}
	if skipped := m.Layers - m.KVLayers; skipped > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("%d layers keep no KV cache (recurrent layers); their recurrent state is not included", skipped))
	}
}

// swaLayout is how llama.cpp interleaves sliding-window (or chunked)
// layers with full-attention ones for an architecture: in each period
// of layers all but the last are windowed (llama_hparams::set_swa_pattern
// in src/llama-hparams.cpp). Window is the default window size when the
// file has no attention.sliding_window key; fixedWindow ignores the key.
type swaLayout struct {
	period      uint64
	window      uint64
	fixedWindow bool
}

// swaLayouts lists the architectures whose layouts llama.cpp hard-codes
// in llama_model::load_hparams (src/llama-model.cpp): Gemma 2 alternates
// (window 4096 by default), Gemma 3 has five local layers per global
// one, Command R7B (cohere2) three per global, gpt-oss alternates (its
// period can be overridden by attention.sliding_window_pattern), and
// Llama 4 has three chunked layers (8192-token chunks) per global one.
var swaLayouts = map[string]swaLayout{
	"gemma2":  {period: 2, window: 4096},
	"gemma3":  {period: 6},
	"cohere2": {period: 4},
	"gpt-oss": {period: 2},
	"llama4":  {period: 4, window: 8192, fixedWindow: true},
}

// kvPadding is the cell padding of llama.cpp's KV cache with flash
// attention (llama_kv_cache::get_padding: 256, or 32 without it).
const kvPadding = 256

// slidingWindow returns which layers are windowed (nil when none) and
// sets SWALayers and SWACells. A windowed layer keeps
// min(context, pad(window + ubatch, 256)) cells, the size of the SWA
// half of llama.cpp's llama_kv_cache_iswa (src/llama-kv-cache-iswa.cpp),
// or the full context with --swa-full.
func (m *Memory) slidingWindow(f *File, opts Options) ([]bool, error) {
	arch := m.Architecture
	layout, ok := swaLayouts[arch]
	if p, has := f.Uint(arch + ".attention.sliding_window_pattern"); has && p > 0 {
		layout.period, ok = p, true
	}
	if !ok {
		return nil, nil
	}
	window := layout.window
	if w, has := f.Uint(arch + ".attention.sliding_window"); has && !layout.fixedWindow {
		window = w
	}
	if window == 0 || layout.period == 0 {
		return nil, nil
	}
	if window > maxContext {
		return nil, fmt.Errorf("%s.attention.sliding_window %d: out of range", arch, window)
	}
	ubatch := opts.UBatch
	if ubatch <= 0 {
		ubatch = defaultUBatch
	}
	if ubatch > maxContext {
		return nil, fmt.Errorf("ubatch size %d: out of range", ubatch)
	}
	cells := alignUp(int64(window)+int64(ubatch), kvPadding)
	if opts.SWAFull || cells > int64(m.ContextSize) {
		cells = int64(m.ContextSize)
	}
	swa := make([]bool, m.Layers)
	for il := range swa {
		swa[il] = uint64(il)%layout.period < layout.period-1
		if swa[il] {
			m.SWALayers++
		}
	}
	m.SWACells = int(cells)
	return swa, nil
}
