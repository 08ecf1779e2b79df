package memory

import (
	"slices"
	"strconv"
	"strings"

	"github.com/gpumem/gpumem/model"
)

// Module component and stack names used by the model inventory.
const (
	compEmbedding = "embedding"
	compLMHead    = "lm_head"
	compProjector = "projector"
	stackText     = "text"
	stackVision   = "vision"
	stackProj     = "projector"
)

// trainSpec is the resolved trainable set of a frozen/partial job
// (Job.Trainable, Job.TrainableParams); for full training all is true.
type trainSpec struct {
	all      bool
	count    int64    // TrainableParams when only a count is known
	patterns []string // module names, components or stacks
	lo, hi   int      // trainable text-layer range, inclusive; lo > hi when none
	// lowest is the lowest text layer holding a trainable parameter (or
	// whose input requires grad); layers below it record no activations
	// (MODEL.md §4.3.5). 0 when the embedding is trainable, Layers when
	// only modules above the layers train.
	lowest int
	// vision and projector say whether the VLM tower / projector train.
	vision, projector bool
}

// resolveTrainable reads Method, Trainable and TrainableParams.
func (s *setup) resolveTrainable() error {
	L := s.m.Text.Layers
	t := trainSpec{lo: 1, hi: 0, lowest: L}
	switch s.method {
	case MethodFull:
		t = trainSpec{all: true, lo: 0, hi: L - 1, vision: true, projector: true}
	case MethodLoRA, MethodQLoRA:
		if err := s.resolveLoRA(); err != nil {
			return err
		}
		t.lowest = s.lora.lowest
		t.vision = s.lora.vision
		// Trainable entries next to adapters are PEFT modules_to_save:
		// fully trained copies of those modules (e.g. embed_tokens, lm_head).
		if err := t.parse(s.job.Trainable, L); err != nil {
			return err
		}
		if err := t.checkPatterns(s.m); err != nil {
			return err
		}
		if len(s.job.Trainable) > 0 {
			t.resolveLowest(s.m)
		}
	case MethodFrozen:
		if s.job.TrainableParams < 0 {
			return FieldErrorf("trainable_params", "{trainable_params}: want a positive count, got %d", s.job.TrainableParams)
		}
		if total := s.m.TotalParams(); s.job.TrainableParams > total {
			return FieldErrorf("trainable_params", "{trainable_params}: %d is more than the model's %d parameters", s.job.TrainableParams, total)
		}
		if err := t.parse(s.job.Trainable, L); err != nil {
			return err
		}
		if err := t.checkPatterns(s.m); err != nil {
			return err
		}
		t.count = s.job.TrainableParams
		if len(t.patterns) == 0 && t.lo > t.hi && t.count > 0 {
			// Only a count: assume it is spread over all layers (LN-tuning,
			// IA3-like), so every layer records the frozen inventory.
			t.lowest = 0
		}
		if len(s.job.Trainable) == 0 && t.count == 0 {
			return FieldErrorf("method", "{method=frozen}: name the trainable modules ({trainable}) or give {trainable_params}")
		}
		t.resolveLowest(s.m)
	}
	s.trainable = t
	return nil
}

// parse reads --trainable entries: "layers:A-B", "top:N", "bottom:N",
// a component ("projector", "lm_head", "embedding", "norm", "vision", ...)
// or a module-name fragment ("multi_modal_projector", "mlp.down_proj").
func (t *trainSpec) parse(entries []string, L int) error {
	for _, e := range entries {
		e = strings.TrimSpace(e)
		low := strings.ToLower(e)
		switch {
		case e == "":
			continue
		case strings.HasPrefix(low, "top:") || strings.HasPrefix(low, "last:"):
			n, err := strconv.Atoi(low[strings.IndexByte(low, ':')+1:])
			if err != nil || n < 1 || n > L {
				return FieldErrorf("trainable", "{trainable=%q}: want top:N with 1 <= N <= %d layers", e, L)
			}
			t.addRange(L-n, L-1)
		case strings.HasPrefix(low, "bottom:") || strings.HasPrefix(low, "first:"):
			n, err := strconv.Atoi(low[strings.IndexByte(low, ':')+1:])
			if err != nil || n < 1 || n > L {
				return FieldErrorf("trainable", "{trainable=%q}: want bottom:N with 1 <= N <= %d layers", e, L)
			}
			t.addRange(0, n-1)
		case strings.HasPrefix(low, "layers:") || strings.HasPrefix(low, "layers."):
			a, b, ok := strings.Cut(low[len("layers:"):], "-")
			if !ok {
				b = a
			}
			lo, err1 := strconv.Atoi(a)
			hi, err2 := strconv.Atoi(b)
			if err1 != nil || err2 != nil || lo < 0 || hi < lo || hi >= L {
				return FieldErrorf("trainable", "{trainable=%q}: want layers:A-B with 0 <= A <= B < %d", e, L)
			}
			t.addRange(lo, hi)
		default:
			t.patterns = append(t.patterns, low)
		}
	}
	return nil
}

// addRange widens the trainable layer range.
func (t *trainSpec) addRange(lo, hi int) {
	if t.lo > t.hi {
		t.lo, t.hi = lo, hi
		return
	}
	t.lo, t.hi = min(t.lo, lo), max(t.hi, hi)
}

// resolveLowest finds the lowest text layer that must record activations
// and whether the vision tower / projector train.
func (t *trainSpec) resolveLowest(m *model.Model) {
	if t.lo <= t.hi {
		t.lowest = min(t.lowest, t.lo)
	}
	for i := range m.Modules {
		mod := &m.Modules[i]
		if !t.matches(mod) {
			continue
		}
		switch {
		case mod.Stack == stackVision:
			t.vision = true
		case mod.Stack == stackProj || mod.Component == compProjector:
			t.projector = true
		case mod.Component == compEmbedding && mod.Stack == stackText:
			t.lowest = 0
		case mod.Layer >= 0 && mod.Stack == stackText:
			t.lowest = min(t.lowest, mod.Layer)
		}
	}
	if t.vision || t.projector {
		// Image features flow into the LLM at its input: every text layer
		// above must pass gradients down.
		t.lowest = 0
	}
}

// matches reports whether a module matches a name pattern or component.
func (t *trainSpec) matches(mod *model.Module) bool {
	if len(t.patterns) == 0 {
		return false
	}
	comp, stack, name := strings.ToLower(mod.Component), strings.ToLower(mod.Stack), strings.ToLower(mod.Name)
	for _, p := range t.patterns {
		if p == comp || p == stack || globContains(name, p) {
			return true
		}
	}
	return false
}

// checkPatterns rejects a --trainable name that matches no module of m:
// it would silently train nothing.
func (t *trainSpec) checkPatterns(m *model.Model) error {
	if m.Text.TiedEmbeddings && slices.Contains(t.patterns, "lm_head") && !slices.Contains(t.patterns, "embedding") {
		// A tied output head is the input embedding's weight: training
		// lm_head trains that shared matrix (and any head modules of its own).
		t.patterns = append(t.patterns, "embedding")
	}
	for _, p := range t.patterns {
		if p == "lm_head" && m.Text.TiedEmbeddings {
			continue
		}
		one := trainSpec{patterns: []string{p}}
		found := false
		for i := range m.Modules {
			if one.matches(&m.Modules[i]) {
				found = true
				break
			}
		}
		if !found {
			return FieldErrorf("trainable", "{trainable=%q}: matches no module of %s (use a component such as embedding, lm_head, norm, projector, vision, a module-name fragment such as mlp.down_proj, or layers:A-B; 'gpumem params' lists the modules)", p, m.ID)
		}
	}
	return nil
}

// fraction is the share of a module's instances that train (0..1).
func (t *trainSpec) fraction(mod *model.Module) float64 {
	if t.all {
		return 1
	}
	if t.matches(mod) {
		return 1
	}
	if t.lo <= t.hi && mod.Layer >= 0 && mod.Stack == stackText {
		n := max(mod.Layers, 1)
		lo, hi := max(t.lo, mod.Layer), min(t.hi, mod.Layer+n-1)
		if hi >= lo {
			return float64(hi-lo+1) / float64(n)
		}
	}
	return 0
}

// globContains matches a pattern with optional '*' wildcards anywhere in
// name: each '*'-separated part in turn, after the previous one.
func globContains(name, pattern string) bool {
	for {
		part, rest, more := strings.Cut(pattern, "*")
		i := strings.Index(name, part)
		if i < 0 {
			return false
		}
		if !more {
			return true
		}
		name, pattern = name[i+len(part):], rest
	}
}

// tensorGroup is a set of identical trainable tensors, the unit optimizer
// state sizes are computed on (factored and 8-bit states depend on shapes).
type tensorGroup struct {
	count      float64 // number of tensors (fractional for partial layer ranges)
	rows, cols float64 // 2-D shape; cols == 0 for a 1-D tensor of rows elements
	embedding  bool    // an nn.Embedding weight
	matrix     bool    // a 2-D weight inside the layers (Muon, GaLore, APOLLO targets)
	adapter    bool    // a LoRA adapter tensor (adapter dtype)
}

// numel is the element count of one tensor of the group.
func (g tensorGroup) numel() float64 {
	if g.cols == 0 {
		return g.rows
	}
	return g.rows * g.cols
}

// moduleTensors calls fn with the tensor groups of one module scaled by frac.
func moduleTensors(m *model.Model, mod *model.Module, frac float64, fn func(tensorGroup)) {
	gs, k := moduleGroups(m, mod, frac)
	for i := range k {
		fn(gs[i])
	}
}

// moduleGroups returns the tensor groups of one module scaled by frac:
// a Linear's weight and bias, an embedding table, or one group of the
// module's parameters; k of them, none when frac leaves no instance.
func moduleGroups(m *model.Model, mod *model.Module, frac float64) (gs [2]tensorGroup, k int) {
	n := float64(mod.Instances) * frac
	if n <= 0 {
		return gs, 0
	}
	switch {
	case mod.In > 0 && mod.Out > 0:
		inLayers := mod.Layer >= 0 && mod.Component != compLMHead
		gs[0] = tensorGroup{count: n, rows: float64(mod.Out), cols: float64(mod.In), matrix: inLayers}
		if bias := mod.Each - int64(mod.In)*int64(mod.Out); bias > 0 {
			gs[1] = tensorGroup{count: n, rows: float64(bias)}
			return gs, 2
		}
	case mod.Component == compEmbedding && m.Text.Hidden > 0 && mod.Each%int64(m.Text.Hidden) == 0:
		gs[0] = tensorGroup{count: n, rows: float64(mod.Each / int64(m.Text.Hidden)), cols: float64(m.Text.Hidden), embedding: true}
	default:
		gs[0] = tensorGroup{count: n, rows: float64(mod.Each)}
	}
	return gs, 1
}

// forEachTrainable calls fn with every trainable tensor group of the job:
// base parameters (full or partial training) and LoRA adapters.
func (s *setup) forEachTrainable(fn func(tensorGroup)) {
	switch s.method {
	case MethodLoRA, MethodQLoRA:
		s.forEachAdapter(fn)
		if len(s.job.Trainable) == 0 {
			return
		}
	}
	for i := range s.m.Modules {
		mod := &s.m.Modules[i]
		if f := s.trainable.fraction(mod); f > 0 {
			moduleTensors(s.m, mod, f*s.frac(i), fn)
		}
	}
	if s.countOnly() {
		// Only a count is known: one group of 1-D-like tensors.
		fn(tensorGroup{count: 1, rows: float64(s.trainable.count)})
	}
}

// countOnly reports whether the trainable set is known only as a count
// (Job.TrainableParams without module names or layers).
func (s *setup) countOnly() bool {
	t := &s.trainable
	return !t.all && t.count > 0 && len(t.patterns) == 0 && t.lo > t.hi
}

// trParams are the parameter counts and per-tensor sums the states are
// computed from, gathered in one pass over the trainable tensors.
type trParams struct {
	total     int64   // all parameters of the model
	trainable float64 // trainable parameters (base + adapters)
	adapters  float64 // LoRA adapter parameters
	linear    float64 // parameters of Linear weights (autocast cache, §2.2)
	maxTensor float64 // elements of the largest trainable tensor
	maxLinear float64 // elements of the largest quantizable Linear weight (dequantization)

	gradBytes    float64 // gradients of all trainable tensors
	masterBytes  float64 // fp32 master copy of trainable base parameters
	adapterBytes float64 // adapter weights in the adapter dtype
	optStates    float64 // optimizer persistent state
	stateNumel   float64 // bytes of one full-size state over all trainable tensors (foreach transient)
	maxState     float64 // bytes of one full-size state of the largest tensor
	hostOpt      float64 // host bytes of a CPU-offloaded optimizer (torchao CPUOffloadOptimizer)
}

// countParams sums the model inventory and the trainable set.
func (s *setup) countParams() (p trParams) {
	tab := s.tab
	p.total, p.linear, p.maxLinear = tab.total, tab.linear, tab.maxLinear
	if s.quantHead {
		p.maxLinear = tab.maxHead
	}
	if s.wholeDense() {
		// Every tensor trains, wholly on this rank, with full-size dense
		// states: the sums are the model table's totals times the
		// per-element widths (exact: integer counts times powers of two).
		addUniform(&p, tab.numel, tab.maxNumel, s.gradElemBytes(false), s.stateElemBytes(false), s.master, s.opt.states)
		return p
	}
	// Per-dtype widths, resolved once: [base, adapter].
	acc := paramAcc{
		p:      &p,
		hf:     s.framework == FrameworkHF,
		adB:    s.adapter.BytesPerElement(),
		wB:     s.weight.BytesPerElement(),
		gradB:  [2]float64{s.gradElemBytes(false), s.gradElemBytes(true)},
		stateB: [2]float64{s.stateElemBytes(false), s.stateElemBytes(true)},
		master: s.master,
		opt:    s.opt,
	}
	adapters := s.method == MethodLoRA || s.method == MethodQLoRA
	if !adapters {
		// The base groups of forEachTrainable, in its order, without a
		// call through a function value per group.
		rows := tab.rows()
		for i := range s.m.Modules {
			mod, row := &s.m.Modules[i], &rows[i]
			f := 1.0 // trainable.fraction without a call for full training
			if !s.trainable.all {
				f = s.trainable.fraction(mod)
			}
			if f > 0 {
				if frac := f * s.fracs[i]; float64(mod.Instances)*frac > 0 {
					for j := range row.k {
						acc.addCount(&row.gs[j], row.gs[j].count*frac)
					}
				}
			}
		}
	}
	switch {
	case adapters:
		s.forEachTrainable(acc.add)
	case s.countOnly():
		acc.add(tensorGroup{count: 1, rows: float64(s.trainable.count)})
	}
	return p
}

// paramAcc gathers trParams over trainable tensor groups.
type paramAcc struct {
	p      *trParams
	hf     bool
	adB    float64    // adapter bytes per element
	wB     float64    // base weight bytes per element
	gradB  [2]float64 // gradient bytes per element: base, adapter
	stateB [2]float64 // optimizer state bytes per element: base, adapter
	master bool
	opt    *optimizerSpec
}

// add counts one tensor group.
func (a *paramAcc) add(g tensorGroup) { a.addCount(&g, g.count) }

// wholeDense reports whether every parameter trains, wholly on this rank,
// with a dense optimizer: then countParams and modelStates read the
// model table's totals instead of summing module by module. (Only full
// training sets trainable.all, so no adapters train.)
func (s *setup) wholeDense() bool {
	return s.trainable.all && s.unitFracs && s.opt.kind == optDense && !s.slowSums
}

// addUniform adds to p base (non-adapter) tensors of n elements in all,
// the largest of maxNumel, with gradients of gradB and optimizer states
// of stateB bytes per element (states of them per parameter) and an
// fp32 master copy when master, as paramAcc.addCount over each of them
// would.
func addUniform(p *trParams, n, maxNumel, gradB, stateB float64, master bool, states float64) {
	p.trainable += n
	p.maxTensor = max(p.maxTensor, maxNumel)
	if master {
		p.masterBytes += 4 * n
	}
	p.gradBytes += n * gradB
	p.optStates += states * n * stateB
	p.stateNumel += n * stateB
	p.maxState = max(p.maxState, maxNumel*stateB)
}

// addCount counts count tensors of group g (whose own count it ignores).
func (a *paramAcc) addCount(g *tensorGroup, count float64) {
	p := a.p
	numel := g.numel()
	n := count * numel
	k := 0
	p.trainable += n
	p.maxTensor = larger(p.maxTensor, numel)
	if g.adapter {
		k = 1
		p.adapters += n
		p.adapterBytes += n * a.adB
	} else if a.master {
		p.masterBytes += 4 * n
	}
	p.gradBytes += n * a.gradB[k]
	eb := a.stateB[k]
	if a.opt.kind == optDense {
		p.optStates += a.opt.states * n * eb
	} else {
		p.optStates += count * a.opt.groupState(*g, eb, a.hf)
	}
	if a.opt.kind == optCPUOffload && numel >= torchaoMinSize {
		// Pinned host copies of the parameter and its gradient
		// (empty_like(p_device)) and the CPU optimizer's states.
		pb := a.wB
		if g.adapter {
			pb = a.adB
		}
		p.hostOpt += n * (pb + a.gradB[k] + a.opt.states*eb)
	}
	p.stateNumel += n * eb
	p.maxState = larger(p.maxState, numel*eb)
}

// larger is max(a, b) of two sizes: the builtin without its NaN and
// signed-zero cases, which element counts and byte sizes never take.
func larger(a, b float64) float64 {
	if b > a {
		return b
	}
	return a
}
