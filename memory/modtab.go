package memory

import (
	"strings"

	"github.com/gpumem/gpumem/model"
)

// modTab is the part of a model's inventory every training estimate
// reads, computed once per model: totals and, per module, its tensor
// groups at full size. An [Estimator] keeps it between calls; the model
// must not change meanwhile.
type modTab struct {
	total     int64   // all parameters
	active    int64   // parameters one token uses (activeParams)
	linear    float64 // Σ In·Out·Instances over Linear weights (autocast cache, §2.2)
	maxLinear float64 // elements of the largest Linear weight but the output head
	maxHead   float64 // elements of the largest Linear weight, output head included
	// numel and maxNumel are Σ count·numel over every tensor group and the
	// largest group's numel: the trainable sums of full training when
	// every module is wholly on the rank (setup.countParams).
	numel, maxNumel float64
	// headParams and embParams are the parameters of the output head and
	// final norm, and of the text embedding (gradient phases, modelStates).
	headParams, embParams float64
	// oneLayerType says every text layer has one layer type (attention
	// kind, cross-attention, MoE), so any layer range is uniform
	// (setup.uniformLayers); extraNorms is extraNormsOf(m).
	oneLayerType bool
	extraNorms   float64
	haveNames    bool               // the rows' LoRA fields are filled (named)
	n            int                // modules
	inline       [inlineRows]modRow // the rows of a model of at most inlineRows modules
	more         []modRow           // the rows of a larger model
	// frac and fracMore are scratch memory for the per-module rank
	// fractions of the stage being estimated (setup.fracs): a modTab
	// belongs to one estimate at a time. fracOnes says they hold 1 for
	// every module, as the last stage filled them (setup.fillFracs skips
	// rewriting them then).
	frac     [inlineRows]float64
	fracMore []float64
	fracOnes bool
	// The weights' allocator footprint (setup.weightFootprint) for
	// allocKey, once allocOK.
	allocKey                  allocKey
	allocAbsorbed, allocSlack float64
	allocOK                   bool
}

// fracs returns the scratch slice for per-module rank fractions.
func (t *modTab) fracs() []float64 {
	if t.n > inlineRows {
		if t.fracMore == nil {
			t.fracMore = make([]float64, t.n)
		}
		return t.fracMore
	}
	return t.frac[:t.n]
}

// rows returns the module rows, in the model's module order. (Computed
// rather than kept as a slice into inline, so a modTab can live on the
// stack.)
func (t *modTab) rows() []modRow {
	if t.more != nil {
		return t.more
	}
	return t.inline[:t.n]
}

// modRow is one module's tensor groups with all its instances (count
// Instances): moduleGroups at fraction 1.
type modRow struct {
	gs [2]tensorGroup
	k  int
	// place is where pipeline parallelism puts the module (setup.rankFrac;
	// placeHead and placeEmbed also mark the modules whose gradients are
	// produced first and last in backward, modelStates); tpSplit says
	// tensor parallelism splits it (a Linear or an embedding).
	place   modPlace
	tpSplit bool
	// lname is the module name in lower case and short its last dotted
	// element (LoRA target matching); firstLayer is the first layer of
	// the text stack's first Linear group with the same short name
	// (per-layer adapter geometry). All three are filled by named.
	lname, short string
	firstLayer   int
}

// modPlace is where a module lives in a pipeline: in the text layers,
// on the last stage (output head, final norm), with the text embedding,
// or on the first stage (vision tower, projector, encoder, position
// tables), as setup.rankFrac and setup.onStage place it.
type modPlace uint8

// The module places.
const (
	placeFirst modPlace = iota
	placeLayers
	placeHead
	placeEmbed
)

// placeOf returns the place of mod (the cases of rankFrac and onStage,
// in their order).
func placeOf(mod *model.Module) modPlace {
	switch {
	case mod.Stack == stackText && mod.Layer >= 0:
		return placeLayers
	case mod.Component == compLMHead || mod.Component == "final_norm":
		return placeHead
	case mod.Component == compEmbedding && mod.Stack == stackText:
		return placeEmbed
	}
	return placeFirst
}

// newModTab tabulates m.
func newModTab(m *model.Model) *modTab {
	t := new(modTab)
	t.init(m)
	return t
}

// inlineRows is the number of modules a modTab holds without allocating:
// more than any dense or MoE text model of the catalog lists.
const inlineRows = 32

// init tabulates m into t.
func (t *modTab) init(m *model.Model) {
	*t = modTab{active: activeParams(m), n: len(m.Modules), extraNorms: extraNormsOf(m), oneLayerType: oneLayerType(&m.Text)}
	if t.n > inlineRows {
		t.more = make([]modRow, t.n)
	}
	rows := t.rows()
	for i := range m.Modules {
		mod := &m.Modules[i]
		t.total += mod.Params
		if mod.In > 0 && mod.Out > 0 {
			w := float64(mod.In) * float64(mod.Out)
			t.linear += w * float64(mod.Instances)
			t.maxHead = max(t.maxHead, w)
			if mod.Component != compLMHead {
				t.maxLinear = max(t.maxLinear, w)
			}
		}
		r := &rows[i]
		r.gs, r.k = moduleGroups(m, mod, 1)
		r.place = placeOf(mod)
		r.tpSplit = mod.In > 0 && mod.Out > 0 || mod.Component == compEmbedding
		for j := range r.k {
			g := &r.gs[j]
			t.numel += g.count * g.numel()
			t.maxNumel = max(t.maxNumel, g.numel())
		}
		switch r.place {
		case placeHead:
			t.headParams += float64(mod.Params)
		case placeEmbed:
			t.embParams += float64(mod.Params)
		}
	}
}

// named returns the module rows with their LoRA matching fields (lname,
// short, firstLayer), filled on first use: only LoRA jobs read them.
func (t *modTab) named(m *model.Model) []modRow {
	rows := t.rows()
	if t.haveNames {
		return rows
	}
	for i := range m.Modules {
		rows[i].lname, rows[i].short = strings.ToLower(m.Modules[i].Name), lastElem(m.Modules[i].Name)
	}
	for i := range rows {
		rows[i].firstLayer = m.Modules[i].Layer
		for j := range m.Modules {
			o := &m.Modules[j]
			if o.Stack == stackText && o.Layer >= 0 && o.In > 0 && rows[j].short == rows[i].short {
				rows[i].firstLayer = o.Layer
				break
			}
		}
	}
	t.haveNames = true
	return rows
}

// sameKV reports whether two layers cache the same keys and values
// (per-layer KV widths and KV sharing, Gemma 4).
func sameKV(a, b model.LayerType) bool {
	return a.KVHeads == b.KVHeads && a.HeadDim == b.HeadDim && a.SharedKV == b.SharedKV
}

// oneLayerType reports whether the stack's layers all have one layer
// type, as uniformLayers compares them.
func oneLayerType(st *model.Stack) bool {
	lts := st.LayerTypes[:min(len(st.LayerTypes), st.Layers)]
	for _, l := range lts {
		if l.CrossAttention != lts[0].CrossAttention || l.MoE != lts[0].MoE || !sameAttn(l.Attention, lts[0].Attention) || !sameKV(l, lts[0]) ||
			l.State != lts[0].State || l.FFN != lts[0].FFN || l.NoFFN != lts[0].NoFFN {
			return false
		}
	}
	return true
}
