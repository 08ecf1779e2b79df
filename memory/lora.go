package memory

import (
	"slices"
	"strings"

	"github.com/gpumem/gpumem/model"
)

// loraSpec is the resolved adapter configuration.
type loraSpec struct {
	rank    int
	variant string // lora, dora, lora-fa
	dropout float64
	targets []string // folded (fold) target names
	allLin  bool
	// hits are the (module, in, out) pairs the adapters wrap, found once
	// by matchTargets; forEachTarget walks them.
	hits []loraHit
	// lowest is the lowest text layer holding an adapter.
	lowest int
	// vision is true when adapters sit in the vision tower too.
	vision bool
	// per-layer adapter geometry of the text stack (for activations):
	// inputs of adapted modules grouped by the tensor they read.
	perLayer loraLayer

	// Options of the PEFT methods beyond LoRA (resolvePEFT).
	ff                             []string // IA3 feedforward modules (folded)
	lokrFactor                     int      // LoKr decompose_factor (-1: near the square root)
	lokrBoth                       bool     // LoKr decompose_both
	oftBlock                       int      // OFT oft_block_size, when rank is 0
	boftBlock, boftNum, boftFactor int      // BOFT boft_block_size, boft_block_num, boft_n_butterfly_factor
	virtual                        int      // prompt learning: num_virtual_tokens
	prefixProj                     bool     // prefix tuning: prefix_projection
	encHidden                      int      // P-tuning / prefix projection: encoder_hidden_size (0: the token width)
	veraIn, veraOut                int      // VeRA: the widest adapted input and output (the shared A and B)
}

// loraHit is one module an adapter wraps, with the in and out widths of
// the adapter (a share of a fused projection has its own out width).
type loraHit struct {
	mod     int // index into Model.Modules
	in, out int
}

// defaultLoRATargets is PEFT's default target list for Llama-style
// models (huggingface/peft:src/peft/utils/constants.py,
// TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING).
var defaultLoRATargets = []string{"q_proj", "v_proj"}

// loraLayer summarises which inputs of one decoder layer feed adapters.
type loraLayer struct {
	attnIn  int     // adapters reading the attention-norm output (q, k, v or fused qkv)
	oIn     int     // adapters reading the attention output (o_proj)
	mlpIn   int     // adapters reading the MLP-norm output (gate, up)
	downIn  int     // adapters reading the MLP hidden state (down)
	rankOut float64 // Σ rank over adapted modules (r-wide lora_A outputs)
	outSum  float64 // Σ out width over adapted modules (DoRA keeps per-output terms)
	qkvIn   int     // fused qkv module adapted (one shared input)
	// attnRank and attnOut are the parts of rankOut and outSum of the
	// attention block's adapters (q, k, v, fused qkv, o).
	attnRank, attnOut float64

	// For the PEFT methods beyond LoRA (peftAct), per input group of the
	// layer (inputGroup: the attention norm's output, the attention
	// output, the MLP norm's output, the MLP hidden state):
	in    [numGroups]float64 // Σ in of the adapted modules
	out   [numGroups]float64 // Σ out
	w     [numGroups]float64 // Σ in·out: weight-sized tensors (LoHa/LoKr ΔW, BOFT's rotated weight)
	sq    [numGroups]float64 // Σ in²: BOFT's identity, and its permutations times the butterfly factor
	rot   [numGroups]float64 // Σ blocks·b²: OFT's rotation blocks
	ranks [numGroups]float64 // Σ r: VeRA's r-wide intermediates
	ffIn  [numGroups]float64 // IA3: Σ in of the feedforward modules (which scale their input)
	ffOut [numGroups]float64 // IA3: Σ out of the other modules (which scale their output)
	mods  [numGroups]int     // adapted modules
	maxW  float64            // the largest in·out (one ΔW gradient in backward)
	// kvGrad is prefix tuning: every layer's keys and values require grad.
	kvGrad bool
}

// Input groups of a decoder layer: the tensors its Linears read.
const (
	groupAttnIn = iota // the attention norm's output (q, k, v, fused qkv)
	groupO             // the attention output (o)
	groupMLPIn         // the MLP norm's output (gate, up)
	groupDown          // the MLP hidden state (down)
	numGroups
)

// inputGroup is the group of a linear role.
func inputGroup(r linearRole) int {
	switch r {
	case roleQKV, roleFusedQKV:
		return groupAttnIn
	case roleO:
		return groupO
	case roleMLPIn:
		return groupMLPIn
	}
	return groupDown
}

// Defaults of PEFT's LoraConfig (huggingface/peft:src/peft/tuners/lora/config.py):
// r = 8 in PEFT; the contract documents 16 as the CLI default.
const defaultLoRARank = 16

// fusedQKV are short names of fused query/key/value projections.
var fusedQKV = []string{"qkv_proj", "query_key_value", "c_attn", "wqkv", "qkv", "attn"}

// resolveLoRA validates rank, variant and targets. The variant was read
// with the method (resolveVariant).
func (s *setup) resolveLoRA() error {
	j := s.job
	l := loraSpec{rank: j.LoRARank, dropout: j.LoRADropout, variant: s.lora.variant, virtual: s.lora.virtual}
	if l.rank == 0 {
		l.rank = defaultLoRARank
	}
	if l.rank < 0 {
		return FieldErrorf("lora_rank", "{lora_rank}: want a positive rank, got %d", j.LoRARank)
	}
	if l.dropout < 0 || l.dropout >= 1 {
		return FieldErrorf("lora_dropout", "{lora_dropout}: want 0 <= p < 1, got %v", j.LoRADropout)
	}
	if l.variant == "" {
		l.variant = VariantLoRA
	}
	if err := s.resolvePEFT(&l); err != nil {
		return err
	}
	if promptLearning(l.variant) {
		// Virtual tokens in front of every layer: nothing wrapped, every
		// layer records (peft_model.py PeftModelForCausalLM.forward);
		// prefix tuning's keys and values require grad from layer 0.
		l.lowest = 0
		l.perLayer.kvGrad = l.variant == VariantPrefixTuning
		s.lora = l
		return nil
	}
	if len(l.targets) == 0 {
		l.targets = foldAll(j.LoRATargets)
	}
	if len(l.targets) == 0 {
		l.targets = defaultLoRATargets
	}
	for _, t := range l.targets {
		if t == "all-linear" || t == "all_linear" || t == "all" {
			l.allLin = true
		}
	}
	s.lora = l
	s.matchTargets()
	return s.scanAdapters()
}

// scanAdapters checks each adapted module against the method's shape
// rules and fills the per-layer geometry and the lowest adapted layer.
func (s *setup) scanAdapters() error {
	l := &s.lora
	l.lowest = s.m.Text.Layers
	var found bool
	var err error
	rows := s.tab.named(s.m)
	for _, h := range l.hits {
		mod, in, out, short := &s.m.Modules[h.mod], h.in, h.out, rows[h.mod].short
		found = true
		if e := s.checkPEFTShapes(mod, in, out); e != nil && err == nil {
			err = e
		}
		if mod.Stack == stackVision {
			l.vision = true
		}
		if mod.Stack != stackText || mod.Layer < 0 {
			continue
		}
		l.lowest = min(l.lowest, mod.Layer)
		// Per-layer geometry is counted once, on the first layer group of
		// each short name, even when groups are split into layer runs
		// (MoE/dense).
		if mod.Layer != rows[h.mod].firstLayer {
			continue
		}
		s.addLayerGeometry(short, rows[h.mod].lname, in, out)
	}
	if err != nil {
		return err
	}
	if !found {
		return FieldErrorf("lora_target_modules", "{lora_target_modules=%s}: no Linear of %s matches", strings.Join(l.targets, ","), s.m.ID)
	}
	return nil
}

// addLayerGeometry records one adapted module of a text layer.
func (s *setup) addLayerGeometry(short, lname string, in, out int) {
	g := &s.lora.perLayer
	rank := float64(s.lora.rank)
	role := linearRoleOf(short)
	s.addPEFTGeometry(inputGroup(role), short, lname, in, out)
	switch role {
	case roleQKV:
		g.attnIn++
		g.attnRank, g.attnOut = g.attnRank+rank, g.attnOut+float64(out)
	case roleFusedQKV:
		// q and v adapters on one fused qkv Linear share its input and
		// its dropout (litgpt LoRAQKVLinear).
		g.qkvIn = 1
		g.attnRank, g.attnOut = g.attnRank+rank, g.attnOut+float64(out)
	case roleO:
		g.oIn++
		g.attnRank, g.attnOut = g.attnRank+rank, g.attnOut+float64(out)
	case roleMLPIn:
		g.mlpIn++
	default:
		g.downIn++
	}
	g.rankOut += float64(s.lora.rank)
	g.outSum += float64(out)
}

// linearRole is which input of a decoder layer a Linear reads.
type linearRole int

const (
	roleQKV      linearRole = iota // a query, key or value projection: the attention norm's output
	roleFusedQKV                   // a fused q/k/v projection: the same input, once
	roleO                          // the attention output projection: the attention output
	roleMLPIn                      // a gate or up projection: the MLP norm's output
	roleDown                       // the MLP down projection: the MLP hidden state
)

// linearRoleOf classifies a Linear of a decoder layer by its short name
// (HF, GPT-NeoX, GPT-2, T5, Megatron and litgpt spellings); anything
// unknown is taken as reading the MLP hidden state.
func linearRoleOf(short string) linearRole {
	switch short {
	case "q_proj", "k_proj", "v_proj", "query", "key", "value", "q", "k", "v":
		return roleQKV
	case "o_proj", "dense", "out_proj", "o", "proj", "c_proj":
		return roleO
	case "gate_proj", "up_proj", "fc1", "w1", "w3", "dense_h_to_4h", "fc_1", "fc_2", "wi", "wi_0", "wi_1", "gate_up_proj":
		return roleMLPIn
	}
	if isFused(short) {
		return roleFusedQKV
	}
	return roleDown
}

// isFused reports whether a short name is a fused qkv projection.
func isFused(short string) bool {
	for _, f := range fusedQKV {
		if short == f {
			return true
		}
	}
	return false
}

// forEachTarget calls fn for every (module, in, out) an adapter wraps.
func (s *setup) forEachTarget(fn func(mod *model.Module, in, out int, short string)) {
	rows := s.tab.named(s.m)
	for _, h := range s.lora.hits {
		fn(&s.m.Modules[h.mod], h.in, h.out, rows[h.mod].short)
	}
}

// matchTargets finds the modules the adapters wrap (lora.hits), in
// module order. The hits go to the Estimator's memory when there is one,
// and are reused from there by the next job with the same targets (they
// depend on nothing else).
func (s *setup) matchTargets() {
	l := &s.lora
	var hits []loraHit
	if b := s.buf; b != nil {
		if b.hitsOK && slices.Equal(b.hitsFor, l.targets) {
			l.hits = b.hits
			return
		}
		hits = b.hits[:0]
	}
	rows := s.tab.named(s.m)
	for i := range s.m.Modules {
		mod := &s.m.Modules[i]
		if mod.In <= 0 || mod.Out <= 0 {
			continue
		}
		short, lname := rows[i].short, rows[i].lname
		if l.allLin {
			// PEFT all-linear: every Linear except the output head
			// (huggingface/peft:src/peft/tuners/tuners_utils.py).
			if mod.Component != compLMHead {
				hits = append(hits, loraHit{i, mod.In, mod.Out})
			}
			continue
		}
		for _, t := range l.targets {
			switch {
			case t == short || dottedSuffix(lname, t):
				hits = append(hits, loraHit{i, mod.In, mod.Out})
			case isFused(short) && mod.Layer >= 0 && (t == "q_proj" || t == "k_proj" || t == "v_proj") && !s.hasShort(t):
				st := s.stackOf(mod)
				w := st.Heads * st.HeadDim
				if t != "q_proj" {
					w = st.KVHeads * st.HeadDim
				}
				hits = append(hits, loraHit{i, mod.In, w})
			}
		}
	}
	if b := s.buf; b != nil {
		b.hits, b.hitsFor, b.hitsOK = hits, append(b.hitsFor[:0], l.targets...), true
	}
	l.hits = hits
}

// foldAll returns names folded (fold); names itself when every name is
// already folded.
func foldAll(names []string) []string {
	for i, n := range names {
		if fold(n) != n {
			out := make([]string, len(names))
			copy(out, names[:i])
			for j := i; j < len(names); j++ {
				out[j] = fold(names[j])
			}
			return out
		}
	}
	return names
}

// dottedSuffix reports whether name ends in "." + suffix.
func dottedSuffix(name, suffix string) bool {
	n := len(name) - len(suffix)
	return n > 0 && name[n-1] == '.' && name[n:] == suffix
}

// hasShort reports whether any module has the given short name.
func (s *setup) hasShort(short string) bool {
	for i := range s.m.Modules {
		if lastElem(s.m.Modules[i].Name) == short {
			return true
		}
	}
	return false
}

// stackOf returns the stack a module belongs to.
func (s *setup) stackOf(mod *model.Module) *model.Stack {
	switch {
	case mod.Stack == stackVision && s.m.Vision != nil:
		return &s.m.Vision.Stack
	case mod.Stack == "encoder" && s.m.Encoder != nil:
		return s.m.Encoder
	}
	return &s.m.Text
}

// forEachAdapter calls fn with the adapter tensors: A (r×in) and B (out×r)
// per wrapped module (LoRA arXiv:2106.09685: r·(in+out) parameters); DoRA
// adds a magnitude vector of out (arXiv:2402.09353); LoRA-FA freezes A
// (arXiv:2308.03303), so only B trains. The other PEFT methods' tensors
// are forEachPEFTTensor's and forEachPromptTensor's.
func (s *setup) forEachAdapter(fn func(tensorGroup)) {
	l := &s.lora
	if promptLearning(l.variant) {
		s.forEachPromptTensor(fn)
		return
	}
	r := float64(l.rank)
	for _, h := range l.hits {
		n := float64(s.m.Modules[h.mod].Instances) * s.frac(h.mod)
		switch l.variant {
		case VariantLoRA, VariantDoRA, VariantLoRAFA:
		default:
			s.forEachPEFTTensor(h, n, fn)
			continue
		}
		if l.variant != VariantLoRAFA {
			fn(tensorGroup{count: n, rows: r, cols: float64(h.in), adapter: true, matrix: true})
		}
		fn(tensorGroup{count: n, rows: float64(h.out), cols: r, adapter: true, matrix: true})
		if l.variant == VariantDoRA {
			fn(tensorGroup{count: n, rows: float64(h.out), adapter: true})
		}
	}
}

// lastElem is the last dotted element of a module name.
func lastElem(name string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[i+1:]
	}
	return name
}
