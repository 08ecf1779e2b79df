package memory

import "math"

// optState is the optimizer memory of the trainable set on one rank.
type optState struct {
	states    float64 // persistent state bytes
	transient float64 // extra bytes while step() runs
	paged     bool    // states live in CUDA unified memory (bnb paged)
}

// optimizerState computes the persistent state and the step transient of
// the job's optimizer over its trainable tensors (MODEL.md §2.3, §2.4,
// §15.6). States are per trainable parameter only.
func (s *setup) optimizerState(p *trParams) optState {
	o := s.opt
	// AdaLoRA's rank allocator keeps its importance scores beside the
	// optimizer's state (adapterStateBytes).
	st := optState{states: p.optStates + s.adapterStateBytes(p.adapters)}
	stateNumel, maxState := p.stateNumel, p.maxState
	st.paged = o.info.Paged
	switch {
	case s.optInBwd:
		// The step runs per parameter inside backward: at most one
		// tensor's intermediate at a time.
		st.transient = o.perTensorTransient(maxState, p.maxTensor)
	case o.info.Impl == "foreach" && o.states > 0:
		// foreach: "~ sizeof(params) more peak memory than the for-loop
		// version" (torch.optim docstrings; MODEL.md §2.3): the
		// exp_avg_sq.sqrt() list for Adam-type, the momentum update list
		// for SGD-type optimizers, in the state dtype.
		st.transient = stateNumel
	default:
		st.transient = o.perTensorTransient(maxState, p.maxTensor)
	}
	if s.master && !s.gradFP32 {
		// Mixed precision with an fp32 master: gradients are converted
		// to fp32 for the update (DeepSpeed single_grad_partition, apex
		// master grads; MODEL.md §2.3).
		st.transient += 4 * (p.trainable - p.adapters)
	}
	return st
}

// groupState is the persistent state bytes of one tensor of group g with
// full-size states of eb bytes per element.
func (o *optimizerSpec) groupState(g tensorGroup, eb float64, hf bool) float64 {
	n := g.numel()
	matrix := g.cols > 0
	switch o.kind {
	case optDense:
		return o.states * n * eb
	case optBnb8bit:
		// bnb keeps fp32 states for small tensors and (HF Trainer) for
		// embeddings; else one uint8 per element + one fp32 absmax per
		// 256-element block, per state.
		if n < bnb8MinSize || (g.embedding && hf && o.hfEmbedding32) {
			return o.states * n * 4
		}
		return o.states * (n + 4*math.Ceil(n/bnb8BlockSize))
	case optFactored:
		if matrix {
			return 4 * (g.rows + g.cols)
		}
		return 4 * n
	case optCAME:
		if matrix {
			return n*eb + 4*2*(g.rows+g.cols)
		}
		return n*eb + 4*n
	case optGaLore, optApollo:
		if !matrix || g.embedding || !g.matrix {
			return 8 * n
		}
		lo, hi := min(g.rows, g.cols), max(g.rows, g.cols)
		if o.kind == optGaLore {
			r := min(galoreRank, lo)
			return 4 * (lo*r + 2*hi*r)
		}
		r := min(apolloRank, lo)
		return 4 * 2 * r * hi
	case optMuon:
		if matrix && g.matrix && !g.embedding {
			return n * eb
		}
		return 2 * n * eb
	case optShampoo:
		return shampooState(g)
	case optAdamMini:
		if matrix {
			return 4*n + 4*g.rows*adamMiniBlocks
		}
		return 4*n + 4
	case optTorchao:
		// _new_buffer: quantized when numel >= 4096 and a multiple of the
		// block, zeros_like(p) otherwise.
		if n < torchaoMinSize || math.Mod(n, o.block) != 0 {
			return o.states * n * eb
		}
		return o.states * (n*o.codeBytes + 4*n/o.block + 4*o.qmap)
	case optCPUOffload:
		// Only tensors under minimal_size keep a GPU optimizer.
		if n < torchaoMinSize {
			return o.states * n * eb
		}
		return 0
	}
	return 0
}

// shampooState is Distributed Shampoo's state for one tensor: the matrix
// is cut into blocks of at most shampooMaxDim per side; each block keeps
// left and right Kronecker factors and their inverse roots in fp32, plus
// AdaGrad grafting and momentum (one fp32 tensor each). 1-D tensors use
// diagonal statistics (two fp32 vectors) plus grafting and momentum.
func shampooState(g tensorGroup) float64 {
	n := g.numel()
	if g.cols == 0 {
		return 4 * 4 * n
	}
	blocks := func(dim float64) (full, rest float64) {
		full = math.Floor(dim / shampooMaxDim)
		rest = dim - full*shampooMaxDim
		return
	}
	rf, rr := blocks(g.rows)
	cf, cr := blocks(g.cols)
	// Σ over row blocks of (block rows)² × number of column blocks, and
	// symmetrically for columns; ×2 for factor + inverse root, ×4 bytes.
	nColBlocks := cf + boolF(cr > 0)
	nRowBlocks := rf + boolF(rr > 0)
	left := (rf*shampooMaxDim*shampooMaxDim + rr*rr) * nColBlocks
	right := (cf*shampooMaxDim*shampooMaxDim + cr*cr) * nRowBlocks
	return 2*4*(left+right) + 2*4*n
}

// perTensorTransient is the step intermediate of a for-loop (or per
// parameter) implementation: one tensor's worth for Adam-type updates
// (the denominator sqrt(v)+eps), the fp32 update and squared gradient of
// Adafactor, the Newton-Schulz iterates of Muon.
func (o *optimizerSpec) perTensorTransient(maxState, maxNumel float64) float64 {
	switch o.kind {
	case optFactored, optCAME:
		return 2 * 4 * maxNumel
	case optMuon:
		// bf16 X (n·m) + A = X Xᵀ and A·A (at most n·m each) per matrix.
		return 2*maxNumel + 2*2*maxNumel
	case optBnb8bit, optNoState, optCPUOffload:
		return 0
	case optTorchao:
		// torch.compile(single_param_adam, fullgraph=True) runs the
		// dequantize, update and requantize of one parameter as compiled
		// kernels over its blocks: no full-size intermediate is counted.
		return 0
	case optGaLore, optApollo:
		return 4 * maxNumel // full-size update projected back
	}
	if o.info.Impl == "fused" || o.states == 0 {
		return 0
	}
	return maxState
}

// boolF is 1 for true, 0 for false.
func boolF(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
