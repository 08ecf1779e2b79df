package jobfile

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"github.com/gpumem/gpumem/internal/decoded"
	"github.com/gpumem/gpumem/model"
	"github.com/gpumem/gpumem/units"
)

// Shape describes a model by its size and whichever dimensions are known,
// for files that give no config.json. Zero fields are filled by the shape
// rule of [Shape.Model].
type Shape struct {
	// Name labels the model in results ("custom" when empty).
	Name string `json:"name,omitempty"`
	// Params is the stated total parameter count.
	Params int64 `json:"num_parameters,omitempty"`

	// Layers, Hidden, Heads, KVHeads, Intermediate, Vocab and
	// MaxPositions are the config.json dimensions of the same names.
	Layers       int `json:"num_hidden_layers,omitempty"`
	Hidden       int `json:"hidden_size,omitempty"`
	Heads        int `json:"num_attention_heads,omitempty"`
	KVHeads      int `json:"num_key_value_heads,omitempty"`
	Intermediate int `json:"intermediate_size,omitempty"`
	Vocab        int `json:"vocab_size,omitempty"`
	MaxPositions int `json:"max_position_embeddings,omitempty"`

	// Experts > 0 makes every layer a mixture of experts (Mixtral layout;
	// with SharedFFN, the Qwen2-MoE layout with a shared expert).
	Experts         int `json:"num_experts,omitempty"`
	ExpertsPerToken int `json:"num_experts_per_tok,omitempty"`
	ExpertFFN       int `json:"moe_intermediate_size,omitempty"`
	SharedFFN       int `json:"shared_expert_intermediate_size,omitempty"`
}

// Shape rule constants.
const (
	// shapeHeadDim is the head width of Llama 1/2/3, Mistral and Qwen2.
	shapeHeadDim = 128
	// shapeLayersPerWidth: Llama-2-7B has 32 layers of width 4096, one
	// layer per 128 of width; the rule keeps that aspect ratio.
	shapeLayersPerWidth = 128
	// shapeMultiple is the rounding of widths (Llama's multiple_of = 256).
	shapeMultiple = 256
	// shapeVocab is the vocabulary when none is given (Llama 1/2, and the
	// engine calculators' default).
	shapeVocab = 32000
	// shapeMaxParams bounds a stated size (10 T parameters).
	shapeMaxParams = 10_000_000_000_000
)

// Model builds a synthetic Llama-like decoder (RMSNorm, RoPE, SwiGLU, no
// biases, untied embeddings) for the shape. The rule for missing fields:
//
//   - hidden size h: cube root of 128·P/12, rounded to a multiple of 256
//     (a dense SwiGLU layer with f ≈ 8h/3 holds 12h² parameters, and
//     layers = h/128 as in Llama-2-7B);
//   - heads h/128 (head_dim 128), KV heads = heads (multi-head attention,
//     as Llama 2 up to 13B and the engine calculators' formulas);
//   - vocabulary 32,000, max_position_embeddings 4096;
//   - dense: the layer count, when not given, is solved from P with
//     f = 8h/3; then the FFN width f is solved from P at that layer
//     count (rounded to 256);
//   - MoE: expert width 8h/3 rounded to 256 when not given, top-2 routing,
//     and the layer count solved from P when not given.
//
// It returns the model and a note saying which shape was assumed and how
// its exact parameter count compares with the stated one.
func (s Shape) Model() (*model.Model, string, error) {
	c, err := s.solve()
	if err != nil {
		return nil, "", err
	}
	data, err := json.Marshal(c.config())
	if err != nil {
		return nil, "", err
	}
	m, err := model.Parse(data)
	if err != nil {
		return nil, "", fmt.Errorf("synthetic model: %w", err)
	}
	m.ID = s.Name
	if m.ID == "" {
		m.ID = "custom"
	}
	var total int64
	for _, mod := range m.Modules {
		total += mod.Params
	}
	note := fmt.Sprintf("model shape assumed (no config.json): %d layers, hidden %d, %d heads (%d KV), FFN %d, vocab %d",
		c.Layers, c.Hidden, c.Heads, c.KVHeads, c.Intermediate, c.Vocab)
	if c.Experts > 0 {
		note += fmt.Sprintf(", %d experts (top-%d) of width %d", c.Experts, c.ExpertsPerToken, c.ExpertFFN)
		if c.SharedFFN > 0 {
			note += fmt.Sprintf(" + shared %d", c.SharedFFN)
		}
	}
	note += fmt.Sprintf("; %s parameters", units.Params(total))
	if s.Params > 0 {
		note += fmt.Sprintf(" (stated %s, %+.1f%%)", units.Params(s.Params), 100*(float64(total)-float64(s.Params))/float64(s.Params))
	}
	return m, note, nil
}

// solve fills the missing dimensions by the rule of [Shape.Model].
func (s Shape) solve() (Shape, error) {
	c := s
	if c.Params < 0 || c.Params > shapeMaxParams {
		return c, fmt.Errorf("num_parameters %d out of range (0, %d]", c.Params, int64(shapeMaxParams))
	}
	if c.Params == 0 && (c.Hidden == 0 || c.Layers == 0) {
		return c, fmt.Errorf("give num_parameters, or hidden_size and num_hidden_layers")
	}
	if c.Vocab == 0 {
		c.Vocab = shapeVocab
	}
	if c.MaxPositions == 0 {
		c.MaxPositions = 4096
	}
	if c.Hidden == 0 {
		h := math.Cbrt(float64(shapeLayersPerWidth) * float64(c.Params) / 12)
		c.Hidden = max(shapeMultiple, roundTo(h, shapeMultiple))
	}
	if c.Heads == 0 {
		c.Heads = max(1, c.Hidden/shapeHeadDim)
	}
	if c.Hidden%c.Heads != 0 {
		return c, fmt.Errorf("hidden_size %d is not a multiple of num_attention_heads %d", c.Hidden, c.Heads)
	}
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if c.Heads%c.KVHeads != 0 {
		return c, fmt.Errorf("num_attention_heads %d is not a multiple of num_key_value_heads %d", c.Heads, c.KVHeads)
	}
	def := max(shapeMultiple, roundTo(float64(c.Hidden)*8/3, shapeMultiple))
	if c.Experts > 0 {
		if c.ExpertsPerToken == 0 {
			c.ExpertsPerToken = min(2, c.Experts)
		}
		if c.ExpertFFN == 0 {
			c.ExpertFFN = def
		}
		if c.Intermediate == 0 {
			c.Intermediate = c.ExpertFFN
		}
	}
	switch {
	case c.Layers == 0:
		per := c.layerParams()
		c.Layers = max(1, int(math.Round(float64(c.Params-c.outsideParams())/float64(per))))
		if c.Experts == 0 && c.Intermediate == 0 {
			c.Intermediate = c.solveFFN(def) // closer to the stated total at the rounded layer count
		}
	case c.Intermediate == 0 && c.Params > 0:
		c.Intermediate = c.solveFFN(def)
	}
	if c.Intermediate == 0 {
		c.Intermediate = def
	}
	if c.Layers > 4096 || c.Hidden > 1<<17 || c.Intermediate > 1<<20 {
		return c, fmt.Errorf("shape too large: %d layers, hidden %d, FFN %d", c.Layers, c.Hidden, c.Intermediate)
	}
	return c, nil
}

// outsideParams counts embedding, head and final norm.
func (s Shape) outsideParams() int64 {
	return 2*int64(s.Vocab)*int64(s.Hidden) + int64(s.Hidden)
}

// attnParams counts one layer's attention and norms.
func (s Shape) attnParams() int64 {
	h, d := int64(s.Hidden), int64(s.Hidden/s.Heads)
	return 2*h*int64(s.Heads)*d + 2*h*int64(s.KVHeads)*d + 2*h
}

// layerParams counts one layer at the shape's FFN width (the default
// width when it is not yet known).
func (s Shape) layerParams() int64 {
	h := int64(s.Hidden)
	f := int64(s.Intermediate)
	if f == 0 {
		f = int64(max(shapeMultiple, roundTo(float64(s.Hidden)*8/3, shapeMultiple)))
	}
	if s.Experts > 0 {
		return s.attnParams() + int64(s.Experts)*3*h*int64(s.ExpertFFN) + int64(s.Experts)*h + 3*h*int64(s.SharedFFN)
	}
	return s.attnParams() + 3*h*f
}

// solveFFN solves the dense FFN width from the stated total.
func (s Shape) solveFFN(def int) int {
	rest := s.Params - s.outsideParams() - int64(s.Layers)*s.attnParams()
	f := float64(rest) / float64(3*int64(s.Hidden)*int64(s.Layers))
	if f < shapeMultiple {
		return def
	}
	return roundTo(f, shapeMultiple)
}

func roundTo(x float64, m int) int { return int(math.Round(x/float64(m))) * m }

// config renders the solved shape as a Hugging Face config.json.
func (s Shape) config() map[string]any {
	c := map[string]any{
		"architectures":           []string{"LlamaForCausalLM"},
		"model_type":              "llama",
		"hidden_size":             s.Hidden,
		"num_hidden_layers":       s.Layers,
		"num_attention_heads":     s.Heads,
		"num_key_value_heads":     s.KVHeads,
		"intermediate_size":       s.Intermediate,
		"vocab_size":              s.Vocab,
		"max_position_embeddings": s.MaxPositions,
		"hidden_act":              "silu",
		"rms_norm_eps":            1e-5,
		"tie_word_embeddings":     false,
		"torch_dtype":             "bfloat16",
	}
	switch {
	case s.Experts > 0 && s.SharedFFN > 0:
		c["architectures"], c["model_type"] = []string{"Qwen2MoeForCausalLM"}, "qwen2_moe"
		c["num_experts"], c["num_experts_per_tok"] = s.Experts, s.ExpertsPerToken
		c["moe_intermediate_size"], c["shared_expert_intermediate_size"] = s.ExpertFFN, s.SharedFFN
		c["decoder_sparse_step"], c["mlp_only_layers"] = 1, []int{}
	case s.Experts > 0:
		c["architectures"], c["model_type"] = []string{"MixtralForCausalLM"}, "mixtral"
		c["num_local_experts"], c["num_experts_per_tok"] = s.Experts, s.ExpertsPerToken
		c["intermediate_size"] = s.ExpertFFN
	}
	return c
}

// shapeKeys maps the keys of a model object onto Shape fields; several
// spellings are accepted (Hugging Face names first).
var shapeKeys = map[string]func(*Shape) *int{
	"num_hidden_layers":               func(s *Shape) *int { return &s.Layers },
	"num_layers":                      func(s *Shape) *int { return &s.Layers },
	"hidden_size":                     func(s *Shape) *int { return &s.Hidden },
	"num_attention_heads":             func(s *Shape) *int { return &s.Heads },
	"num_key_value_heads":             func(s *Shape) *int { return &s.KVHeads },
	"intermediate_size":               func(s *Shape) *int { return &s.Intermediate },
	"vocab_size":                      func(s *Shape) *int { return &s.Vocab },
	"max_position_embeddings":         func(s *Shape) *int { return &s.MaxPositions },
	"num_experts":                     func(s *Shape) *int { return &s.Experts },
	"num_local_experts":               func(s *Shape) *int { return &s.Experts },
	"num_experts_per_tok":             func(s *Shape) *int { return &s.ExpertsPerToken },
	"top_k":                           func(s *Shape) *int { return &s.ExpertsPerToken },
	"moe_intermediate_size":           func(s *Shape) *int { return &s.ExpertFFN },
	"expert_intermediate_size":        func(s *Shape) *int { return &s.ExpertFFN },
	"shared_expert_intermediate_size": func(s *Shape) *int { return &s.SharedFFN },
}

// readModel reads the "model" key: a reference string or a shape object.
func (r *reader) readModel(v any, f *File) {
	switch x := v.(type) {
	case string:
		if f.Model = x; x == "" {
			r.add(keyModel, "empty model reference")
		}
	case map[string]any:
		s := r.shape(keyModel, x, nil)
		f.Shape = &s
	default:
		r.add(keyModel, "want a model reference (catalog id, Hub id or config.json path) or an object with num_parameters, got %s", decoded.Kind(v))
	}
}

// shape reads a model object; extra handles keys of other layouts and
// reports whether it knew the key.
func (r *reader) shape(prefix string, obj map[string]any, extra func(key string, v any, s *Shape) bool) Shape {
	var s Shape
	known := []string{"name", "num_parameters"}
	for k := range shapeKeys {
		known = append(known, k)
	}
	sort.Strings(known)
	r.fields(prefix, obj, known, func(key, k string, v any) bool {
		switch {
		case key == "name":
			s.Name, _ = r.str(k, v)
		case key == "num_parameters":
			if n, ok := r.count(k, v); ok {
				s.Params = n
			}
		case shapeKeys[key] != nil:
			if n, ok := r.integer(k, v, 1); ok {
				*shapeKeys[key](&s) = int(n)
			}
		case extra != nil && extra(key, v, &s):
		default:
			return false
		}
		return true
	})
	if s.Params == 0 && (s.Hidden == 0 || s.Layers == 0) {
		r.add(prefix, "give num_parameters (e.g. \"7B\"), or hidden_size and num_hidden_layers")
	} else if _, err := s.solve(); err != nil {
		r.add(prefix, "%v", err)
	}
	return s
}
