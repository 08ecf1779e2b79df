package safetensors

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Group is a total over the tensors sharing one key (a dtype or a kind).
type Group struct {
	// Key is the dtype or kind the group collects.
	Key string `json:"key"`
	// Tensors is the number of tensors in the group.
	Tensors int `json:"tensors"`
	// Elements is the stored element count of the group.
	Elements int64 `json:"elements"`
	// Bytes is the stored data size of the group.
	Bytes int64 `json:"bytes"`
}

// Summary totals a checkpoint's tensors by dtype and by kind.
type Summary struct {
	// Tensors, Elements and Bytes are totals over every stored tensor.
	Tensors  int   `json:"tensors"`
	Elements int64 `json:"elements"`
	Bytes    int64 `json:"bytes"`
	// Params is the element count of the [Parameter] tensors: the number
	// to compare with a config-based parameter count.
	Params int64 `json:"params"`
	// ByDType groups all tensors by dtype, largest first: this is how a
	// pre-quantized or mixed-dtype checkpoint's weight memory is sized exactly.
	ByDType []Group `json:"by_dtype"`
	// ByKind groups all tensors by [Kind], largest first.
	ByKind []Group `json:"by_kind"`
}

// Summarize totals tensors by dtype and kind. tied is the config's
// tie_word_embeddings, used to recognise a stored duplicate output head.
// Totals saturate rather than overflow.
func Summarize(tensors []Tensor, tied bool) Summary {
	all := make(map[string]Tensor, len(tensors))
	for _, t := range tensors {
		all[t.Name] = t
	}
	byDType := map[string]*Group{}
	byKind := map[string]*Group{}
	var s Summary
	for _, t := range tensors {
		kind := Classify(t, all, tied)
		s.Tensors++
		s.Elements = satAdd(s.Elements, t.Elements)
		s.Bytes = satAdd(s.Bytes, t.Bytes)
		if kind == Parameter {
			s.Params = satAdd(s.Params, t.Elements)
		}
		addTo(byDType, string(t.DType), t)
		addTo(byKind, string(kind), t)
	}
	s.ByDType = sortedGroups(byDType)
	s.ByKind = sortedGroups(byKind)
	return s
}

// Kind returns the group of kind k, zero if the checkpoint has none.
func (s Summary) Kind(k Kind) Group {
	for _, g := range s.ByKind {
		if g.Key == string(k) {
			return g
		}
	}
	return Group{Key: string(k)}
}

func addTo(m map[string]*Group, key string, t Tensor) {
	g := m[key]
	if g == nil {
		g = &Group{Key: key}
		m[key] = g
	}
	g.Tensors++
	g.Elements = satAdd(g.Elements, t.Elements)
	g.Bytes = satAdd(g.Bytes, t.Bytes)
}

func sortedGroups(m map[string]*Group) []Group {
	out := make([]Group, 0, len(m))
	for _, g := range m {
		out = append(out, *g)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Bytes != out[j].Bytes {
			return out[i].Bytes > out[j].Bytes
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// satAdd adds two non-negative counts, saturating at the int64 maximum.
func satAdd(a, b int64) int64 {
	if b > 0 && a > maxElements-b {
		return maxElements
	}
	return a + b
}

// Comparison explains the difference between a checkpoint's stored
// elements and a parameter count computed from config.json.
type Comparison struct {
	// ConfigParams is the count computed from the config (unique parameters).
	ConfigParams int64 `json:"config_params"`
	// CheckpointParams is the element count of the checkpoint's parameter tensors.
	CheckpointParams int64 `json:"checkpoint_params"`
	// Unexplained is CheckpointParams - ConfigParams: zero when the config
	// count is exact; meaningful only when Comparable is true.
	Unexplained int64 `json:"unexplained"`
	// Comparable is false when packed quantized tensors hide the logical
	// parameter count of some weights.
	Comparable bool `json:"comparable"`
	// Extras are the stored tensors that are not parameters (buffers,
	// tied copies, quantization bookkeeping, packed weights).
	Extras []Group `json:"extras,omitempty"`
	// Notes say in words where the difference comes from.
	Notes []string `json:"notes,omitempty"`
}

// Compare sets the summary against a config-based parameter count.
func (s Summary) Compare(configParams int64) Comparison {
	c := Comparison{
		ConfigParams:     configParams,
		CheckpointParams: s.Params,
		Unexplained:      s.Params - configParams,
		Comparable:       s.Kind(Packed).Tensors == 0,
	}
	for _, k := range []Kind{TiedCopy, Buffer, QuantAux, Packed} {
		g := s.Kind(k)
		if g.Tensors == 0 {
			continue
		}
		c.Extras = append(c.Extras, g)
		c.Notes = append(c.Notes, extraNote(k, g))
	}
	if !c.Comparable {
		c.Notes = append(c.Notes, "packed quantized weights store several parameters per element; their logical count depends on the quantization config, so the totals are not compared")
	} else if c.Unexplained != 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("%d parameter elements differ from the config count (checkpoint %d, config %d)", c.Unexplained, s.Params, configParams))
	} else {
		c.Notes = append(c.Notes, "the parameter tensors match the config count exactly")
	}
	return c
}

func extraNote(k Kind, g Group) string {
	switch k {
	case TiedCopy:
		return fmt.Sprintf("%d elements are a stored copy of the tied embedding (counted once by the config)", g.Elements)
	case Buffer:
		return fmt.Sprintf("%d elements in %d buffers (rotary inv_freq, causal masks, position ids) are not parameters", g.Elements, g.Tensors)
	case QuantAux:
		return fmt.Sprintf("%d elements in %d quantization scale/zero-point tensors are not parameters", g.Elements, g.Tensors)
	default:
		return fmt.Sprintf("%d packed elements in %d quantized weights (%d bytes)", g.Elements, g.Tensors, g.Bytes)
	}
}

// LayersFrom totals the tensors of layers numbered first and above
// (names containing ".layers.N." or ".h.N." with N >= first). A config's
// num_hidden_layers excludes extra stored layers such as DeepSeek-V3's
// multi-token-prediction layer (model.layers.61), so this explains part
// of a difference found by [Summary.Compare].
func LayersFrom(tensors []Tensor, first int) Group {
	g := Group{Key: fmt.Sprintf("layers>=%d", first)}
	for _, t := range tensors {
		if n, ok := layerIndex(t.Name); ok && n >= first {
			g.Tensors++
			g.Elements = satAdd(g.Elements, t.Elements)
			g.Bytes = satAdd(g.Bytes, t.Bytes)
		}
	}
	return g
}

// layerIndex returns N of the first ".layers.N." or ".h.N." in name.
func layerIndex(name string) (int, bool) {
	for _, marker := range []string{".layers.", ".h."} {
		i := strings.Index("."+name, marker)
		if i < 0 {
			continue
		}
		rest := ("." + name)[i+len(marker):]
		j := strings.IndexByte(rest, '.')
		if j <= 0 {
			continue
		}
		n, err := strconv.Atoi(rest[:j])
		if err == nil && n >= 0 {
			return n, true
		}
	}
	return 0, false
}
