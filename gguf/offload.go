package gguf

import (
	"fmt"
	"strconv"
	"strings"
)

// placement is where llama.cpp puts a model's layers for -ngl
// (llama_model::load_tensors in src/llama-model.cpp): the input layer
// (token embeddings) always stays on the CPU; of the n_layer repeating
// layers the last n_gpu_layers go to the GPU (i_gpu_start = max(n_layer −
// n_gpu_layers, 0)); the output layer (output norm and output matrix)
// counts as layer n_layer, so it is offloaded only when n_gpu_layers ≥
// n_layer + 1. A larger count is capped at n_layer + 1 (act_gpu_layers =
// min(n_gpu_layers, n_layer + 1)).
type placement struct {
	layers    int
	gpuStart  int  // first repeating layer on the GPU
	outputGPU bool // output layer on the GPU
	// requested is -ngl as given (−1 for all), capped the count used.
	requested int
	capped    bool
}

// placeLayers resolves -ngl: nil or −1 means every layer and the output
// layer (llama.cpp's default since it offloads the maximum number of
// layers, ggml-org/llama.cpp PR #15434).
func placeLayers(layers int, ngl *int) (placement, error) {
	p := placement{layers: layers, requested: -1}
	n := layers + 1
	if ngl != nil {
		p.requested = *ngl
		switch {
		case *ngl == -1:
		case *ngl < 0:
			return p, fmt.Errorf("n-gpu-layers %d: want 0 to %d (the %d layers and the output layer), or -1 or all for every layer", *ngl, layers+1, layers)
		case *ngl > layers+1:
			p.capped = true
		default:
			n = *ngl
		}
	}
	p.gpuStart = max(layers-n, 0)
	p.outputGPU = n > layers
	return p, nil
}

// gpuLayers is the number of repeating layers on the GPU.
func (p placement) gpuLayers() int { return p.layers - p.gpuStart }

// onGPU reports whether repeating layer il is on the GPU.
func (p placement) onGPU(il int) bool { return il >= p.gpuStart }

// ParseGPULayers reads an -ngl value as llama.cpp's common/arg.cpp does:
// a number of layers, or "all" (also "auto", which llama.cpp fits to the
// free memory and gpumem reads as every layer, so that the estimate says
// whether they fit). It returns nil for every layer.
func ParseGPULayers(s string) (*int, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "all", "auto", "-1":
		return nil, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return nil, fmt.Errorf("n-gpu-layers %q: want a number of layers, or all", s)
	}
	return &n, nil
}

// tensorLayer returns the repeating layer a tensor belongs to ("blk.12."
// → 12), or −1 for the input layer and −2 for the output layer and other
// non-repeating tensors.
func tensorLayer(name string) int {
	if rest, ok := strings.CutPrefix(name, "blk."); ok {
		if i := strings.IndexByte(rest, '.'); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil && n >= 0 {
				return n
			}
		}
	}
	// LLM_TENSOR_LAYER_INPUT in src/llama-arch.cpp: token embeddings,
	// their norm, token types and learned positions.
	for _, p := range []string{"token_embd.", "token_embd_norm.", "token_types.", "position_embd."} {
		if strings.HasPrefix(name, p) {
			return -1
		}
	}
	return -2
}
