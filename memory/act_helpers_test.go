package memory

import "github.com/gpumem/gpumem/model"

// regime is the activation regime of the text stack, lora field and all
// (what activations reads through actRegime), for tests.
func (s *setup) regime() actRegime {
	var r actRegime
	s.fillRegime(&r)
	r.lora = s.loraLayer()
	return r
}

// splitDecoderLayer returns the parts of decoderLayer before tensor
// parallelism and overrides (fillSplit), for tests.
func splitDecoderLayer(st *model.Stack, lt model.LayerType, r *actRegime) layerSplit {
	var p layerSplit
	fillSplit(st, lt, r, &p)
	return p
}
