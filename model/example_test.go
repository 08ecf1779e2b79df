package model_test

import (
	"fmt"

	"github.com/gpumem/gpumem/model"
)

func ExampleLoad() {
	m, err := model.Load("llama2-7b")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.ID, m.TotalParams())
	for _, c := range m.ByComponent() {
		fmt.Printf("%-10s %d\n", c.Component, c.Params)
	}
	// Output:
	// meta-llama/Llama-2-7b-hf 6738415616
	// embedding  131072000
	// attention  2147483648
	// mlp        4328521728
	// norm       262144
	// final_norm 4096
	// lm_head    131072000
}

func ExampleModel_ActiveParams() {
	m, err := model.Load("mixtral-8x7b")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.1fB total, %.1fB active per token\n", float64(m.TotalParams())/1e9, float64(m.ActiveParams())/1e9)
	// Output: 46.7B total, 12.9B active per token
}

func ExampleModel_MatchLinears() {
	m, err := model.Load("qwen2.5-7b")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mod := range m.MatchLinears([]string{"q_proj", "v_proj"}) {
		fmt.Println(mod.Name, mod.In, mod.Out, mod.Bias, mod.Instances)
	}
	// Output:
	// model.layers.*.self_attn.q_proj 3584 3584 true 28
	// model.layers.*.self_attn.v_proj 3584 512 true 28
}

func ExampleParse() {
	_, err := model.Parse([]byte(`{"model_type": "llama", "num_attention_heads": -3}`))
	fmt.Println(err)
	// Output: config.json: num_attention_heads: want a positive integer, got -3
}
