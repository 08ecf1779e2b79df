package gguf

import (
	"fmt"
	"strings"

	"github.com/gpumem/gpumem/units"
)

// Compute buffers.
//
// llama.cpp sizes its compute buffers once, when the context is created:
// it builds the worst-case graph — one prompt-processing ubatch of
// n_tokens = min(n_ctx, n_ubatch) tokens, every token an output, the KV
// cache at its full size — and lets ggml_backend_sched reserve it
// (llama_context::graph_reserve in src/llama-context.cpp). The scheduler
// gives each backend a buffer as large as ggml-alloc's placement of that
// graph's tensors needs (dynAlloc). This file replays that placement for
// the decoder graph llama.cpp builds for llama-like models
// (llm_build_llama in src/models/llama.cpp with llm_graph_context's
// build_norm, build_attn and build_ffn in src/llama-graph.cpp): per layer
// the attention norm, Q, K and V, the attention (with flash attention
// one fused op; without it the scores [n_kv, n_tokens, n_head] in f32,
// softmax in place, then scores × V), the output projection, the
// residual add, the FFN norm and the FFN (up, gate and their SwiGLU
// product, or the routed experts of a MoE layer), and at the end the
// output norm and the f32 logits of every token.
//
// A tensor is freed once its last consumer has run, and ops that
// ggml-alloc may run in place (norm scaling, RoPE, softmax, residual
// adds) reuse their input. Inputs that cross from one backend to
// another are copied at the start of the backend's split and flagged as
// inputs and outputs so that they are never overwritten; they stay for
// the whole graph.

const (
	// kqMaskPad is GGML_KQ_MASK_PAD (ggml/include/ggml.h): the mask's rows
	// (tokens per stream) are padded to it.
	kqMaskPad = 64
	// gpuAlign is the CUDA buffer alignment
	// (ggml_backend_cuda_buffer_type_get_alignment in
	// ggml/src/ggml-cuda/ggml-cuda.cu); hostAlign the CPU one
	// (TENSOR_ALIGNMENT in ggml/src/ggml-backend.cpp).
	gpuAlign  = 128
	hostAlign = 32
)

// graphDims are the sizes the worst-case graph depends on.
type graphDims struct {
	embd   int64 // n_embd
	vocab  int64 // rows of the output matrix
	tokens int64 // n_tokens of the worst-case ubatch
	// streams is the number of KV streams; each holds tokens/streams of
	// the ubatch.
	streams  int64
	flash    bool
	layers   []layerDims
	maskRows int64 // tokens per stream padded to GGML_KQ_MASK_PAD, times streams
}

// layerDims are one layer's widths.
type layerDims struct {
	heads    int64 // query heads
	qWidth   int64 // query values per token (heads × key length)
	kWidth   int64 // K values per token cached (n_embd_k_gqa)
	vWidth   int64 // V values per token cached
	outWidth int64 // attention output values per token (heads × value length)
	cells    int64 // KV cells the layer attends to (per stream)
	swa      bool
	// ffn is the dense FFN width (0 for none); gated when it has a gate.
	ffn   int64
	gated bool
	// experts, used and expertFFN describe a MoE layer; sharedFFN its
	// shared expert(s).
	experts, used, expertFFN, sharedFFN int64
	noAttn                              bool // recurrent layer: no KV cache
}

// graphSim places the graph's tensors on the two buffers.
type graphSim struct {
	gpu, host dynAlloc
	live      map[int]liveTensor
	next      int
}

type liveTensor struct {
	onGPU bool
	s     span
}

func newGraphSim() *graphSim {
	return &graphSim{gpu: dynAlloc{align: gpuAlign}, host: dynAlloc{align: hostAlign}, live: map[int]liveTensor{}}
}

// add allocates a tensor of size bytes on the GPU or the host buffer.
func (g *graphSim) add(onGPU bool, size int64) int {
	a := &g.host
	if onGPU {
		a = &g.gpu
	}
	g.next++
	g.live[g.next] = liveTensor{onGPU: onGPU, s: a.alloc(size)}
	return g.next
}

// drop frees a tensor after its last consumer.
func (g *graphSim) drop(id int) {
	t, ok := g.live[id]
	if !ok {
		return
	}
	delete(g.live, id)
	if t.onGPU {
		g.gpu.release(t.s)
	} else {
		g.host.release(t.s)
	}
}

// computeBuffers replays the worst-case graph and returns the GPU and
// host compute buffers.
func computeBuffers(d graphDims, p placement) (gpu, host int64) {
	g := newGraphSim()
	const f32, i32, i64 = 4, 4, 8
	T := d.tokens
	E := mul(d.embd, T, f32)
	// Inputs live in the host buffer (the scheduler runs graph inputs on
	// the CPU): token ids, positions, output ids, the K and V row indices
	// the cache stores write through (ggml_set_rows) and the KQ masks
	// (f32; one for the full-attention layers, one for the sliding-window
	// layers). All but the token ids are used on the GPU too, where the
	// scheduler copies them.
	maskBytes := map[bool]int64{}
	for _, l := range d.layers {
		if !l.noAttn {
			maskBytes[l.swa] = mul(l.cells, d.maskRows, f32)
		}
	}
	small := []int64{mul(T, i32), mul(T, i32), mul(T, i64), mul(T, i64)} // pos, out_ids, k_idxs, v_idxs
	g.add(false, mul(T, i32))                                            // token ids
	for _, b := range small {
		g.add(false, b)
	}
	for _, swa := range []bool{false, true} {
		if b, ok := maskBytes[swa]; ok {
			g.add(false, b)
		}
	}
	// The token embeddings are looked up on the CPU, where the input
	// layer stays (get_rows of token_embd).
	hidden, hiddenGPU := g.add(false, E), false
	keep := map[int]bool{}
	inputsOnGPU := false
	// enter moves the hidden state to the device of the next layer: the
	// scheduler copies it, with the inputs that device needs, at the start
	// of the device's split. The copies are never freed, nor is the
	// tensor copied from (no op of the graph consumes it any more).
	enter := func(onGPU bool) {
		if hiddenGPU == onGPU {
			return
		}
		keep[hidden] = true
		hidden, hiddenGPU = g.add(onGPU, E), onGPU
		keep[hidden] = true
		if !onGPU || inputsOnGPU {
			return
		}
		inputsOnGPU = true
		for _, b := range small {
			g.add(true, b)
		}
		for _, swa := range []bool{false, true} {
			if b, ok := maskBytes[swa]; ok {
				g.add(true, b)
				if d.flash {
					g.add(true, b/2) // the mask cast to f16 for flash attention
				}
			}
		}
	}
	for il, l := range d.layers {
		onGPU := p.onGPU(il)
		enter(onGPU)
		hidden = g.layer(onGPU, l, hidden, keep[hidden], d, il == len(d.layers)-1)
	}
	enter(p.outputGPU)
	norm := g.add(p.outputGPU, E)
	if !keep[hidden] {
		g.drop(hidden)
	}
	g.add(p.outputGPU, mul(d.vocab, T, f32)) // logits, f32, kept as a graph output
	g.drop(norm)
	return g.gpu.max, g.host.max
}

// layer places one decoder layer's tensors and returns the layer output.
// in is the layer input (the residual stream); it is freed after its
// last use unless keepIn.
func (g *graphSim) layer(onGPU bool, l layerDims, in int, keepIn bool, d graphDims, last bool) int {
	const f32 = 4
	T := d.tokens
	E := mul(d.embd, T, f32)
	dropIn := func() {
		if !keepIn {
			g.drop(in)
		}
	}
	if l.noAttn {
		norm := g.add(onGPU, E)
		out := g.ffn(onGPU, l, norm, T, E)
		dropIn()
		return out
	}
	norm := g.add(onGPU, E) // rms_norm, then × weight in place
	q := g.add(onGPU, mul(l.qWidth, T, f32))
	k := g.add(onGPU, mul(l.kWidth, T, f32))
	v := 0
	if l.vWidth > 0 {
		v = g.add(onGPU, mul(l.vWidth, T, f32))
	}
	g.drop(norm)
	g.drop(k) // stored into the cache: the store writes a view of it
	g.drop(v)
	var att int
	if d.flash {
		att = g.add(onGPU, mul(l.outWidth, T, f32))
		g.drop(q)
	} else {
		kq := g.add(onGPU, mul(l.cells, T, l.heads, f32)) // scores; softmax in place
		g.drop(q)
		kqv := g.add(onGPU, mul(l.outWidth, T, f32))
		g.drop(kq)
		att = g.add(onGPU, mul(l.outWidth, T, f32)) // heads permuted back, made contiguous
		g.drop(kqv)
	}
	resid := g.add(onGPU, E) // output projection
	g.drop(att)
	if last {
		// The last layer keeps only the rows of the output tokens
		// (get_rows with inp_out_ids: all of them in the worst case), of
		// the attention output and of the residual stream.
		r := g.add(onGPU, E)
		g.drop(resid)
		resid = r
		r2 := g.add(onGPU, E)
		dropIn()
		in, keepIn = r2, false
	}
	dropIn() // residual add, in place
	fnorm := g.add(onGPU, E)
	out := g.ffn(onGPU, l, fnorm, T, E)
	g.drop(resid) // residual add into the FFN output, in place
	return out
}

// ffn places the FFN (dense, MoE and shared experts) and frees norm.
func (g *graphSim) ffn(onGPU bool, l layerDims, norm int, T, E int64) int {
	const f32 = 4
	var out int
	if l.experts > 0 {
		logits := g.add(onGPU, mul(l.experts, T, f32)) // router logits, softmax in place
		sel := g.add(onGPU, mul(l.experts, T, f32))    // argsort (i32), top-k view
		w := g.add(onGPU, mul(l.used, T, f32))         // the selected weights
		g.drop(logits)
		up := g.add(onGPU, l.expertFFN*mul(l.used, T, f32))
		gate := g.add(onGPU, l.expertFFN*mul(l.used, T, f32))
		act := g.add(onGPU, l.expertFFN*mul(l.used, T, f32))
		g.drop(up)
		g.drop(gate)
		ex := g.add(onGPU, mul(E, l.used)) // each token's experts' outputs, weighted in place
		g.drop(act)
		g.drop(sel)
		g.drop(w)
		out = g.add(onGPU, E) // sum of the experts' views
		g.drop(ex)
	}
	if w := l.ffn + l.sharedFFN; w > 0 {
		up := g.add(onGPU, mul(w, T, f32))
		var gate, act int
		if l.gated {
			gate = g.add(onGPU, mul(w, T, f32))
			act = g.add(onGPU, mul(w, T, f32)) // swiglu/geglu of gate and up
			g.drop(up)
			g.drop(gate)
		} else {
			act = up // activation in place
		}
		down := g.add(onGPU, E)
		g.drop(act)
		if out != 0 {
			g.drop(down) // added to the experts' sum in place
		} else {
			out = down
		}
	}
	g.drop(norm)
	if out == 0 {
		out = g.add(onGPU, E)
	}
	return out
}

// mul multiplies sizes, saturating at MaxInt64 (a crafted header cannot
// wrap a buffer size around).
func mul(xs ...int64) int64 {
	r := int64(1)
	for _, x := range xs {
		r = units.MulInt(r, x)
	}
	return r
}

// graphDimsOf collects the graph's sizes from the file.
func graphDimsOf(f *File, m *Memory, c contextLayout, kDims, vDims []uint64, swa []bool, flash bool) (graphDims, []string, error) {
	arch := m.Architecture
	var notes []string
	d := graphDims{tokens: int64(c.tokens), streams: int64(c.streams), flash: flash}
	embd, _ := f.Uint(arch + ".embedding_length")
	d.embd = int64(embd)
	perStream := alignUp(max(d.tokens/d.streams, 1), kqMaskPad)
	d.maskRows = perStream * d.streams
	heads, _, err := f.Uints(arch+".attention.head_count", m.Layers)
	if err != nil {
		return d, nil, err
	}
	keyLen, hasK := f.Uint(arch + ".attention.key_length")
	valLen, hasV := f.Uint(arch + ".attention.value_length")
	shapes := tensorShapes(f)
	d.vocab = shapes.vocab
	if d.vocab == 0 {
		// No output matrix in the file: the vocabulary's size says it.
		if n, ok := f.Uint(arch + ".vocab_size"); ok && n > 0 {
			d.vocab = int64(n)
		} else if toks, ok := f.Metadata["tokenizer.ggml.tokens"].(Array); ok && toks.Len > 0 {
			d.vocab = int64(min(toks.Len, 1<<32))
		} else {
			return d, nil, fmt.Errorf("no output.weight or token_embd.weight tensor, %s.vocab_size or tokenizer.ggml.tokens to size the logits", arch)
		}
	}
	used, _ := f.Uint(arch + ".expert_used_count")
	for il := range m.Layers {
		l := layerDims{heads: int64(heads[il]), kWidth: int64(kDims[il]), vWidth: int64(vDims[il])}
		l.noAttn = kDims[il] == 0 && vDims[il] == 0
		if heads[il] > 0 {
			kl, vl := keyLen, valLen
			if !hasK {
				kl = embd / heads[il]
			}
			if !hasV {
				vl = embd / heads[il]
			}
			l.qWidth, l.outWidth = l.heads*int64(kl), l.heads*int64(vl)
		}
		l.cells = int64(c.perSeq)
		if swa != nil && swa[il] {
			l.cells, l.swa = int64(m.SWACells), true
		}
		s := shapes.layer[il]
		l.ffn, l.gated = s.ffn, s.gated
		l.experts, l.expertFFN, l.sharedFFN = s.experts, s.expertFFN, s.sharedFFN
		if l.experts > 0 {
			l.used = int64(used)
			if l.used == 0 || l.used > l.experts {
				return d, nil, fmt.Errorf("%s.expert_used_count %d: want 1 to the %d experts of layer %d", arch, used, l.experts, il)
			}
		}
		d.layers = append(d.layers, l)
	}
	if isMLA(f) {
		notes = append(notes, "compute buffer: multi-head latent attention runs a graph of its own (absorbed projections); it is sized here as a standard attention over the cached latent, an approximation")
	}
	if m.KVLayers < m.Layers {
		notes = append(notes, "compute buffer: the recurrent layers' state updates are not included")
	}
	return d, notes, nil
}

// layerShape is what a layer's FFN tensors say about its widths.
type layerShape struct {
	ffn, expertFFN, sharedFFN, experts int64
	gated                              bool
}

// fileShapes are the tensor shapes the graph depends on.
type fileShapes struct {
	vocab int64
	layer map[int]layerShape
}

// tensorShapes reads the FFN widths from the layers' tensors (ffn_up
// [n_embd, n_ff]; ffn_up_exps [n_embd, n_ff_exp, n_expert]; ffn_up_shexp
// [n_embd, n_ff_shexp]) and the vocabulary from the output matrix, or the
// token embeddings it is tied to.
func tensorShapes(f *File) fileShapes {
	s := fileShapes{layer: map[int]layerShape{}}
	for _, t := range f.Tensors {
		il := tensorLayer(t.Name)
		switch {
		case (t.Name == "output.weight" || (t.Name == "token_embd.weight" && s.vocab == 0)) && len(t.Dims) == 2:
			s.vocab = int64(t.Dims[1])
		case il < 0 || len(t.Dims) < 2:
			continue
		}
		if il < 0 {
			continue
		}
		ls := s.layer[il]
		name := t.Name[strings.IndexByte(t.Name[4:], '.')+5:]
		switch {
		case strings.HasPrefix(name, "ffn_up_exps.") && len(t.Dims) == 3:
			ls.expertFFN, ls.experts = int64(t.Dims[1]), int64(t.Dims[2])
		case strings.HasPrefix(name, "ffn_up_shexp."):
			ls.sharedFFN = int64(t.Dims[1])
		case strings.HasPrefix(name, "ffn_gate_shexp.") || strings.HasPrefix(name, "ffn_gate.") || strings.HasPrefix(name, "ffn_gate_exps."):
			ls.gated = true
		case strings.HasPrefix(name, "ffn_up."):
			ls.ffn = int64(t.Dims[1])
		}
		s.layer[il] = ls
	}
	return s
}
