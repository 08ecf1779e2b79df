package gguf

import (
	"errors"
	"fmt"
	"sort"

	"github.com/gpumem/gpumem/units"
)

// Options are the run settings an inference estimate depends on, named
// after llama.cpp's flags. The zero value means llama.cpp's defaults
// with the model's full trained context and every layer on the GPU.
type Options struct {
	// ContextSize is n_ctx (-c, --ctx-size): the KV cells of all parallel
	// sequences together; 0 means the model's context_length. llama.cpp
	// pads it to a multiple of 256.
	ContextSize int
	// CacheTypeK and CacheTypeV are the KV-cache types (-ctk, -ctv):
	// f16 (default), bf16, f32, q8_0, q4_0, ...
	CacheTypeK, CacheTypeV string
	// Batch is n_batch (-b, default 2048) and UBatch n_ubatch (-ub,
	// default 512): the worst-case graph that sizes the compute buffers
	// has min(n_ctx, n_ubatch) tokens, and a sliding-window layer keeps
	// window + n_ubatch cells.
	Batch, UBatch int
	// SWAFull keeps full-size caches on sliding-window layers (--swa-full).
	SWAFull bool
	// Parallel is n_seq_max (-np, --parallel): the sequences decoded at
	// once; 0 means 1.
	Parallel int
	// KVUnified is --kv-unified: one KV stream shared by all sequences
	// instead of one stream of n_ctx / n_seq_max cells each.
	KVUnified bool
	// FlashAttention is -fa: on, off or auto (""). Auto is read as on,
	// as llama.cpp resolves it on a GPU that supports it for every layer.
	FlashAttention string
	// GPULayers is -ngl: the repeating layers offloaded to the GPU, the
	// last ones; n_layer + 1 offloads the output layer too. nil (or −1)
	// means every layer, llama.cpp's default; a larger count is capped.
	GPULayers *int
	// NoKVOffload (-nkvo, --no-kv-offload) keeps the KV cache in host
	// memory.
	NoKVOffload bool
}

// TypeTotal is the weight total of one tensor type.
type TypeTotal struct {
	Type     string `json:"type"`
	Tensors  int    `json:"tensors"`
	Elements int64  `json:"elements"`
	Bytes    int64  `json:"bytes"`
}

// Device is the memory llama.cpp allocates on one device.
type Device struct {
	// WeightsBytes are the tensors loaded there (on the host, a mapped
	// file: counted, though the OS may page it).
	WeightsBytes units.Bytes `json:"weights_bytes"`
	// KVCacheBytes is the KV cache of the layers kept there.
	KVCacheBytes units.Bytes `json:"kv_cache_bytes"`
	// ComputeBytes is the compute buffer ("compute buffer size" in
	// llama.cpp's log).
	ComputeBytes units.Bytes `json:"compute_bytes"`
	// OutputBytes is the output buffer of the logits (host only).
	OutputBytes units.Bytes `json:"output_bytes,omitempty"`
	// TotalBytes is the sum.
	TotalBytes units.Bytes `json:"total_bytes"`
}

func (d *Device) total() {
	d.TotalBytes = units.Add(units.Add(d.WeightsBytes, d.KVCacheBytes), units.Add(d.ComputeBytes, d.OutputBytes))
}

// Memory is the memory llama.cpp allocates to run a GGUF model: weights,
// KV cache, compute buffers and the output buffer, on the GPU and on the
// host. It leaves out the CUDA context and the backends' own scratch
// memory, which the Notes say.
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
	// ContextRequested is the context asked for (0: the trained one);
	// ContextSize is n_ctx after llama.cpp's padding, the cells of all
	// streams together, and ContextPerSeq the cells of one stream
	// (n_ctx_seq), the longest sequence one slot holds.
	ContextRequested int `json:"context_requested,omitempty"`
	ContextSize      int `json:"context_size"`
	ContextPerSeq    int `json:"context_per_seq"`
	// Parallel is n_seq_max; KVStreams the KV streams (1 when unified).
	Parallel  int  `json:"parallel"`
	KVUnified bool `json:"kv_unified,omitempty"`
	KVStreams int  `json:"kv_streams"`
	// Batch and UBatch are n_batch and n_ubatch after llama.cpp's caps.
	Batch  int `json:"batch"`
	UBatch int `json:"ubatch"`
	// FlashAttention is whether flash attention is used; FlashAssumed
	// when -fa auto was read as on.
	FlashAttention bool `json:"flash_attention"`
	FlashAssumed   bool `json:"flash_attention_assumed,omitempty"`
	// Layers is the block count and GPULayers the repeating layers on the
	// GPU; OutputOnGPU whether the output layer is offloaded too.
	Layers      int  `json:"layers"`
	GPULayers   int  `json:"gpu_layers"`
	OutputOnGPU bool `json:"output_on_gpu"`
	// KVLayers counts the layers that keep a KV cache.
	KVLayers int `json:"kv_layers"`
	// SWALayers counts the sliding-window (or chunked) layers and
	// SWACells the cells each of them keeps per stream; 0 when none.
	SWALayers int `json:"swa_layers,omitempty"`
	SWACells  int `json:"swa_cells,omitempty"`
	// CacheTypeK and CacheTypeV are the KV-cache types used.
	CacheTypeK string `json:"cache_type_k"`
	CacheTypeV string `json:"cache_type_v"`
	// KCacheBytes, VCacheBytes and KVCacheBytes are the KV cache over all
	// layers and streams.
	KCacheBytes  units.Bytes `json:"k_cache_bytes"`
	VCacheBytes  units.Bytes `json:"v_cache_bytes"`
	KVCacheBytes units.Bytes `json:"kv_cache_bytes"`
	// ComputeBytes is the GPU and host compute buffers together.
	ComputeBytes units.Bytes `json:"compute_bytes"`
	// GPU and Host split everything by where llama.cpp puts it.
	GPU  Device `json:"gpu"`
	Host Device `json:"host"`
	// TotalBytes is GPU plus host.
	TotalBytes units.Bytes `json:"total_bytes"`
	// Notes say what is assumed, approximated or left out.
	Notes []string `json:"notes,omitempty"`
}

// Estimate returns the memory llama.cpp allocates for a GGUF model run
// with opts: the weights (the tensors' exact sizes) on the devices -ngl
// puts them, the KV cache of each layer on its layer's device
// (llama_kv_cache in src/llama-kv-cache.cpp: per layer and stream a K
// tensor of ggml_row_size(type_k, n_embd_k_gqa) bytes per cell and a V
// tensor likewise; MODEL.md §7.2), the compute buffers of the
// worst-case graph (computeBuffers) and the output buffer of the logits.
func Estimate(f *File, opts Options) (*Memory, error) {
	arch := f.Architecture()
	if arch == "" {
		return nil, errors.New("gguf: general.architecture is missing")
	}
	m := &Memory{Architecture: arch}
	m.Name, _ = f.Metadata["general.name"].(string)
	m.weights(f.Tensors)
	if err := m.estimate(f, opts); err != nil {
		return nil, fmt.Errorf("gguf %s: %w", arch, err)
	}
	m.Notes = append(m.Notes, "the CUDA context and the backends' scratch memory (cuBLAS workspace, the flash-attention and matmul pools) are not included")
	return m, nil
}

// maxContext bounds the context size (llama.cpp stores n_ctx in uint32).
const maxContext = 1 << 32

// estimate fills everything past the weight totals.
func (m *Memory) estimate(f *File, opts Options) error {
	arch := m.Architecture
	layers, ok := f.Uint(arch + ".block_count")
	if !ok || layers == 0 || layers > 100_000 {
		return fmt.Errorf("%s.block_count: missing or out of range", arch)
	}
	m.Layers = int(layers)
	trained, hasTrained := f.Uint(arch + ".context_length")
	c, err := layoutContext(arch, trained, hasTrained, opts)
	if err != nil {
		return err
	}
	m.contextFields(c, trained, hasTrained)
	p, err := placeLayers(m.Layers, opts.GPULayers)
	if err != nil {
		return err
	}
	m.GPULayers, m.OutputOnGPU = p.gpuLayers(), p.outputGPU
	if p.capped {
		m.Notes = append(m.Notes, fmt.Sprintf("-ngl %d is more than the %d layers and the output layer: llama.cpp offloads all %d, as here", p.requested, m.Layers, m.Layers+1))
	}
	flash, err := m.flash(opts)
	if err != nil {
		return err
	}
	tk, tv, err := cacheTypes(opts, flash)
	if err != nil {
		return err
	}
	m.CacheTypeK, m.CacheTypeV = tk.String(), tv.String()
	kDims, vDims, err := headDims(f, m.Layers)
	if err != nil {
		return err
	}
	swa, err := m.slidingWindow(f, opts, c)
	if err != nil {
		return err
	}
	if err := m.kvCache(kDims, vDims, swa, tk, tv, c, p, opts.NoKVOffload); err != nil {
		return err
	}
	m.kvNotes(f)
	m.implausible(f)
	m.placeWeights(f.Tensors, p)
	d, notes, err := graphDimsOf(f, m, c, kDims, vDims, swa, flash)
	if err != nil {
		return err
	}
	m.Notes = append(m.Notes, notes...)
	gpu, host := computeBuffers(d, p)
	if m.GPULayers == 0 && !m.OutputOnGPU {
		gpu = 0
	}
	m.GPU.ComputeBytes, m.Host.ComputeBytes = units.Bytes(gpu), units.Bytes(host)
	m.ComputeBytes = units.Add(m.GPU.ComputeBytes, m.Host.ComputeBytes)
	if m.GPULayers > 0 && m.GPULayers < m.Layers || m.GPULayers == m.Layers && !m.OutputOnGPU {
		m.Notes = append(m.Notes, "partial offload: llama.cpp may also run the large matrix products of CPU-held layers on the GPU for prompt batches (op offload), copying their weights into the GPU compute buffer; that copy is not included")
	}
	// The output buffer holds the logits of up to n_seq_max outputs in
	// host memory (llama_context::output_reserve(n_seq_max): n_vocab ×
	// n_outputs_max floats); it grows when a batch asks for more.
	m.Host.OutputBytes = units.Bytes(units.MulInt(units.MulInt(d.vocab, int64(c.seqMax)), 4))
	m.GPU.total()
	m.Host.total()
	m.TotalBytes = units.Add(m.GPU.TotalBytes, m.Host.TotalBytes)
	return nil
}

// contextFields records the context layout and notes what it changed.
func (m *Memory) contextFields(c contextLayout, trained uint64, hasTrained bool) {
	m.ContextRequested, m.ContextSize, m.ContextPerSeq = c.requested, c.nCtx, c.perSeq
	m.Parallel, m.KVUnified, m.KVStreams = c.seqMax, c.unified, c.streams
	m.Batch, m.UBatch = c.batch, c.ubatch
	asked := c.requested
	if asked == 0 {
		asked = int(trained)
	}
	if c.nCtx != asked {
		m.Notes = append(m.Notes, fmt.Sprintf("llama.cpp pads the context of %d tokens to %d cells (a multiple of 256 per sequence)", asked, c.nCtx))
	}
	if c.streams > 1 {
		m.Notes = append(m.Notes, fmt.Sprintf("%d parallel sequences without a unified KV cache: %d streams of %d cells, so one sequence holds at most %d tokens", c.seqMax, c.streams, c.perSeq, c.perSeq))
	}
	if hasTrained && uint64(c.perSeq) > trained && c.requested > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("context %d per sequence exceeds the trained context_length %d", c.perSeq, trained))
	}
}

// flash resolves -fa.
func (m *Memory) flash(opts Options) (bool, error) {
	fa, err := parseFlash(opts.FlashAttention)
	if err != nil {
		return false, err
	}
	m.FlashAttention = fa != FlashOff
	if fa == FlashAuto {
		m.FlashAssumed = true
		m.Notes = append(m.Notes, "flash attention auto: assumed on, as llama.cpp resolves it when the GPU supports it for every layer (pass -fa on or off to say)")
	}
	return m.FlashAttention, nil
}

// cacheTypes parses the K and V cache types (default f16, as llama.cpp).
// A quantized V cache needs flash attention: llama_init_from_model
// refuses to create the context without it ("quantized V cache requires
// flash_attn to be enabled", src/llama-context.cpp), and with -fa auto it
// fails when flash attention resolves to off.
func cacheTypes(opts Options, flash bool) (k, v Type, err error) {
	k, v = typeF16, typeF16
	if opts.CacheTypeK != "" {
		if k, err = parseCacheType(opts.CacheTypeK); err != nil {
			return 0, 0, fmt.Errorf("cache-type-k: %w", err)
		}
	}
	if opts.CacheTypeV != "" {
		if v, err = parseCacheType(opts.CacheTypeV); err != nil {
			return 0, 0, fmt.Errorf("cache-type-v: %w", err)
		}
	}
	if !flash && v.quantized() {
		return 0, 0, fmt.Errorf("cache-type-v %s with flash-attn off: llama.cpp refuses to start (\"quantized V cache requires flash_attn to be enabled\"); use -fa on, or an f16, bf16 or f32 V cache", v)
	}
	return k, v, nil
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

// placeWeights splits the weights between the GPU and the host: the
// input layer on the host, each repeating layer where -ngl puts it, the
// output layer and other non-repeating tensors on the output device. A
// model without output.weight reuses the token embeddings as its output
// matrix; llama.cpp then loads them a second time on the output device
// (TENSOR_DUPLICATED in llama_model::load_tensors).
func (m *Memory) placeWeights(tensors []TensorInfo, p placement) {
	hasOutput := false
	var embd int64
	for _, t := range tensors {
		if t.Name == "output.weight" {
			hasOutput = true
		}
		if t.Name == "token_embd.weight" {
			embd = t.Bytes
		}
		il := tensorLayer(t.Name)
		onGPU := il >= 0 && il < p.layers && p.onGPU(il) || il == -2 && p.outputGPU || il >= p.layers && p.outputGPU
		d := &m.Host
		if onGPU {
			d = &m.GPU
		}
		d.WeightsBytes = units.Add(d.WeightsBytes, units.Bytes(t.Bytes))
	}
	if !hasOutput && embd > 0 && p.outputGPU {
		m.GPU.WeightsBytes = units.Add(m.GPU.WeightsBytes, units.Bytes(embd))
		m.Notes = append(m.Notes, "the output matrix is tied to the token embeddings: llama.cpp keeps a second copy of them on the GPU for the output layer")
	}
}

// kvCache sizes the K and V cache of every layer on its device: per
// stream, a layer keeps its cells (n_ctx_seq, or the sliding-window
// cells) of n_embd_k_gqa K values and n_embd_v_gqa V values.
func (m *Memory) kvCache(kDims, vDims []uint64, swa []bool, tk, tv Type, c contextLayout, p placement, noOffload bool) error {
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
		cells := units.MulInt(int64(c.perSeq), int64(c.streams))
		if swa != nil && swa[il] {
			cells = units.MulInt(int64(m.SWACells), int64(c.streams))
		}
		kb, vb := units.Bytes(units.MulInt(kRow, cells)), units.Bytes(units.MulInt(vRow, cells))
		m.KCacheBytes = units.Add(m.KCacheBytes, kb)
		m.VCacheBytes = units.Add(m.VCacheBytes, vb)
		d := &m.Host
		if p.onGPU(il) && !noOffload {
			d = &m.GPU
		}
		d.KVCacheBytes = units.Add(d.KVCacheBytes, units.Add(kb, vb))
	}
	m.KVCacheBytes = units.Add(m.KCacheBytes, m.VCacheBytes)
	if noOffload {
		m.Notes = append(m.Notes, "--no-kv-offload: the KV cache stays in host memory and attention runs on the CPU")
	}
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

// kvPadding is the cell padding of llama.cpp's KV caches (PR #17046).
const kvPadding = ctxPad

// slidingWindow returns which layers are windowed (nil when none) and
// sets SWALayers and SWACells, the cells each windowed layer keeps per
// stream (the SWA half of llama.cpp's llama_kv_cache_iswa), or the full
// stream with --swa-full.
func (m *Memory) slidingWindow(f *File, opts Options, c contextLayout) ([]bool, error) {
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
	// The SWA half of llama_kv_cache_iswa keeps, per stream, the window of
	// every sequence the stream serves (all n_seq_max of them when
	// unified) plus one ubatch, padded, and never more than the base
	// cache (src/llama-kv-cache-iswa.cpp: GGML_PAD(min(size_base,
	// n_swa·(unified ? n_seq_max : 1) + n_ubatch), n_pad)).
	seqs := int64(1)
	if c.unified {
		seqs = int64(c.seqMax)
	}
	cells := alignUp(min(int64(c.perSeq), units.MulInt(int64(window), seqs)+int64(c.ubatch)), kvPadding)
	if opts.SWAFull || cells > int64(c.perSeq) {
		cells = int64(c.perSeq)
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
