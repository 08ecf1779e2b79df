package model

import (
	"fmt"
	"slices"
	"strings"
)

// What a family's reader covers (Family.Covers).
const (
	CoversText    = "text"    // a language-model decoder
	CoversMoE     = "moe"     // mixture-of-experts layers
	CoversHybrid  = "hybrid"  // linear-attention or SSM layers among attention layers
	CoversVision  = "vision"  // a vision tower and projector
	CoversAudio   = "audio"   // an audio tower
	CoversEncoder = "encoder" // a bidirectional encoder (alone or in an encoder-decoder)
)

// Family describes one model_type gpumem reads natively.
type Family struct {
	// ModelType is config.json's model_type, as readers are keyed.
	ModelType string `json:"model_type"`
	// Covers lists what the reader builds: "text", "moe", "hybrid",
	// "vision", "audio", "encoder".
	Covers []string `json:"covers"`
	// Source is the file whose module layout the reader follows, as
	// owner/repo@revision:path.
	Source string `json:"source"`
}

// familyInfo is one row of families.
type familyInfo struct {
	covers []string
	source string
}

// hf names a file of huggingface/transformers at a revision.
func hf(rev, path string) string {
	return "huggingface/transformers@" + rev + ":src/transformers/models/" + path
}

// v457 is the transformers release the older readers' layouts were
// written against (4.x: one nn.Linear per expert where 5.x fuses them).
const v457 = "v4.57.0"

var (
	text      = []string{CoversText}
	textMoE   = []string{CoversText, CoversMoE}
	vlm       = []string{CoversText, CoversVision}
	vlmMoE    = []string{CoversText, CoversMoE, CoversVision}
	hybrid    = []string{CoversText, CoversHybrid}
	hybridMoE = []string{CoversText, CoversMoE, CoversHybrid}
	hybridVLM = []string{CoversText, CoversMoE, CoversHybrid, CoversVision}
	encoder   = []string{CoversEncoder}
	encDec    = []string{CoversText, CoversEncoder}
)

// families is the one table of per-family facts: for every key of
// readers that reads (all but the refusals of unreadVLMs), what the
// reader covers and the source file its layout follows.
// TestFamiliesTable keeps the two tables in step.
var families = map[string]familyInfo{
	"llama":           {text, hf(v457, "llama/modeling_llama.py")},
	"mistral":         {text, hf(v457, "mistral/modeling_mistral.py")},
	"qwen2":           {text, hf(v457, "qwen2/modeling_qwen2.py")},
	"qwen3":           {text, hf(v457, "qwen3/modeling_qwen3.py")},
	"mixtral":         {textMoE, hf(v457, "mixtral/modeling_mixtral.py")},
	"qwen2_moe":       {textMoE, hf(v457, "qwen2_moe/modeling_qwen2_moe.py")},
	"qwen3_moe":       {textMoE, hf(v457, "qwen3_moe/modeling_qwen3_moe.py")},
	"olmoe":           {textMoE, hf(v457, "olmoe/modeling_olmoe.py")},
	"deepseek_v2":     {textMoE, hf(v457, "deepseek_v2/modeling_deepseek_v2.py")},
	"deepseek_v3":     {textMoE, hf(v457, "deepseek_v3/modeling_deepseek_v3.py")},
	"gpt_oss":         {textMoE, hf(v457, "gpt_oss/modeling_gpt_oss.py")},
	"gemma":           {text, hf(v457, "gemma/modeling_gemma.py")},
	"gemma2":          {text, hf(v457, "gemma2/modeling_gemma2.py")},
	"gemma3_text":     {text, hf(v457, "gemma3/modeling_gemma3.py")},
	"gemma3":          {vlm, hf(v457, "gemma3/modeling_gemma3.py")},
	"phi":             {text, hf(v457, "phi/modeling_phi.py")},
	"phi-msft":        {text, "microsoft/phi-2 (remote code, revision before transformers' phi port):modeling_phi.py"},
	"phi3":            {text, hf(v457, "phi3/modeling_phi3.py")},
	"phi3_v":          {vlm, "microsoft/Phi-3.5-vision-instruct (remote code):modeling_phi3_v.py"},
	"gpt2":            {text, hf(v457, "gpt2/modeling_gpt2.py")},
	"gpt_bigcode":     {text, hf(v457, "gpt_bigcode/modeling_gpt_bigcode.py")},
	"gpt_neox":        {text, hf(v457, "gpt_neox/modeling_gpt_neox.py")},
	"falcon":          {text, hf(v457, "falcon/modeling_falcon.py")},
	"RefinedWeb":      {text, "tiiuae/falcon-40b (remote code):modelling_RW.py"},
	"RefinedWebModel": {text, "tiiuae/falcon-7b (remote code):modelling_RW.py"},
	"bloom":           {text, hf(v457, "bloom/modeling_bloom.py")},
	"opt":             {text, hf(v457, "opt/modeling_opt.py")},
	"qwen":            {text, "Qwen/Qwen-7B (remote code):modeling_qwen.py"},
	"stablelm":        {text, hf(v457, "stablelm/modeling_stablelm.py")},
	"llava":           {vlm, hf(v457, "llava/modeling_llava.py")},
	"qwen2_vl":        {vlm, hf(v457, "qwen2_vl/modeling_qwen2_vl.py")},
	"qwen2_5_vl":      {vlm, hf(v457, "qwen2_5_vl/modeling_qwen2_5_vl.py")},
	"qwen3_vl":        {vlm, hf(v457, "qwen3_vl/modeling_qwen3_vl.py")},
	"qwen2_vl_text":   {text, hf(v457, "qwen2_vl/modeling_qwen2_vl.py")},
	"qwen2_5_vl_text": {text, hf(v457, "qwen2_5_vl/modeling_qwen2_5_vl.py")},
	"qwen3_vl_text":   {text, hf(v457, "qwen3_vl/modeling_qwen3_vl.py")},
	"mllama":          {vlm, hf(v457, "mllama/modeling_mllama.py")},
	"llama4":          {vlmMoE, hf(v457, "llama4/modeling_llama4.py")},
	"llama4_text":     {textMoE, hf(v457, "llama4/modeling_llama4.py")},
	"bert":            {encoder, hf(v457, "bert/modeling_bert.py")},
	"t5":              {encDec, hf(v457, "t5/modeling_t5.py")},
	"bart":            {encDec, hf(v457, "bart/modeling_bart.py")},

	"deepseek_v32":     {textMoE, hf("01f8fa55d98fbd77fb6461c47ae14fc6206f2f87", "deepseek_v32/modeling_deepseek_v32.py")},
	"glm_moe_dsa":      {textMoE, hf("01f8fa55d98fbd77fb6461c47ae14fc6206f2f87", "glm_moe_dsa/modular_glm_moe_dsa.py")},
	"glm4_moe":         {textMoE, hf("a0699c971daff96403489086fcfd07469d20b17f", "glm4_moe/modeling_glm4_moe.py")},
	"minimax_m2":       {textMoE, hf("ea9df1d3bd9784aa7e6abd8f4be29551dd58d6d8", "minimax_m2/modular_minimax_m2.py")},
	"phimoe":           {textMoE, hf(v457, "phimoe/modeling_phimoe.py")},
	"ernie4_5":         {text, hf(v457, "ernie4_5/modeling_ernie4_5.py")},
	"ernie4_5_moe":     {textMoE, hf("a0699c971daff96403489086fcfd07469d20b17f", "ernie4_5_moe/modeling_ernie4_5_moe.py")},
	"hunyuan_v1_dense": {text, hf("1505215df303467822c2ef407e277381f9d290f1", "hunyuan_v1_dense/modeling_hunyuan_v1_dense.py")},
	"hunyuan_v1_moe":   {textMoE, hf("3404f51e382117e3181e9ad481f2de723889643e", "hunyuan_v1_moe/modular_hunyuan_v1_moe.py")},
	"hunyuan":          {textMoE, "Tencent-Hunyuan/Hunyuan-A13B@2798f3c8b6a69e0ce93950b0d2417203cf950fa0:models/modeling_hunyuan.py"},
	"seed_oss":         {text, hf(v457, "seed_oss/modeling_seed_oss.py")},
	"olmo2":            {text, hf("008f5c8c29be84d4721dc6d1e0fcd72300580be4", "olmo2/modular_olmo2.py")},
	"olmo3":            {text, hf("02e8340b967815b4a5417c6273a7774aae298a03", "olmo3/modular_olmo3.py")},
	"smollm3":          {text, hf(v457, "smollm3/modeling_smollm3.py")},
	"cohere":           {text, hf(v457, "cohere/modeling_cohere.py")},
	"cohere2":          {text, hf("ca095230eda56a13ead849509f02fbaaa9b3f0e0", "cohere2/modeling_cohere2.py")},
	"starcoder2":       {text, hf(v457, "starcoder2/modeling_starcoder2.py")},
	"exaone4":          {text, hf("008e574391258935f3ecc3035c882e73bbcac419", "exaone4/modular_exaone4.py")},
	"apertus":          {text, hf("f93a94820ddd536511187a57095b180ce9abfac0", "apertus/modular_apertus.py")},
	"nemotron-nas":     {text, "vllm-project/vllm@2ee6ae787f3088315ea02f64650df0a05dfe566b:vllm/model_executor/models/nemotron_nas.py"},
	"xlm-roberta":      {encoder, hf(v457, "xlm_roberta/modeling_xlm_roberta.py")},
	"modernbert":       {encoder, hf(v457, "modernbert/modeling_modernbert.py")},

	// Multimodal readers; the revisions are the ones their readers cite.
	"qwen3_vl_moe":      {vlmMoE, hf("02e8340b9678", "qwen3_vl_moe/modular_qwen3_vl_moe.py")},
	"qwen3_vl_moe_text": {textMoE, hf("02e8340b9678", "qwen3_vl_moe/modular_qwen3_vl_moe.py")},
	"mistral3":          {vlm, hf("00dcc6dda6f6", "mistral3/modeling_mistral3.py")},
	"internvl_chat":     {vlm, "OpenGVLab/InternVL@03285798fa1e (remote code):internvl_chat/internvl/model/internvl_chat/modeling_internvl_chat.py"},
	"gemma4":            {vlmMoE, hf("0246b4f33354", "gemma4/modeling_gemma4.py")},
	"gemma4_text":       {textMoE, hf("0246b4f33354", "gemma4/modeling_gemma4.py")},
	// hybrids: linear attention or SSM layers among attention layers
	"qwen3_next":       {hybridMoE, hf("043bb8dde14a", "qwen3_next/modular_qwen3_next.py")},
	"qwen3_5":          {[]string{CoversText, CoversHybrid, CoversVision}, hf("009e78d6e89f", "qwen3_5/modular_qwen3_5.py")},
	"qwen3_5_text":     {hybrid, hf("009e78d6e89f", "qwen3_5/modular_qwen3_5.py")},
	"qwen3_5_moe":      {hybridVLM, hf("0960594cbcb3", "qwen3_5_moe/modular_qwen3_5_moe.py")},
	"qwen3_5_moe_text": {hybridMoE, hf("0960594cbcb3", "qwen3_5_moe/modular_qwen3_5_moe.py")},
	"nemotron_h":       {hybridMoE, hf("008d9e9577b0", "nemotron_h/modular_nemotron_h.py")},
	"minimax_m1":       {hybridMoE, "MiniMax-AI/MiniMax-M1@2abb4f45a9df (remote code):modeling_minimax_m1.py"},
}

// refusedFamilies are model_types gpumem recognises and refuses by name,
// with the reason; they are not in readers.
var refusedFamilies = map[string]string{
	"deepseek_v4": "DeepSeek-V4 mixes sliding-window, compressed-sparse (4×) and heavily compressed (128×) " +
		"attention layers behind manifold-constrained hyper-connections and hash-routed MoE " +
		"(huggingface/transformers@361455895daf94ca66f78cf6792b09af397b4b30:src/transformers/models/deepseek_v4/modeling_deepseek_v4.py); " +
		"gpumem does not model its compressed KV cache yet, so it gives no number rather than a wrong one",
}

// Families lists the model_types gpumem reads natively, sorted, with what
// each covers and the source file its layout follows.
func Families() []Family {
	out := make([]Family, 0, len(families))
	for mt, f := range families {
		if _, ok := readers[mt]; !ok {
			continue
		}
		out = append(out, Family{ModelType: mt, Covers: slices.Clone(f.covers), Source: f.source})
	}
	slices.SortFunc(out, func(a, b Family) int {
		return strings.Compare(strings.ToLower(a.ModelType), strings.ToLower(b.ModelType))
	})
	return out
}

// refusedArchs maps the architectures[0] of refused families to their
// model_type, for configs that leave model_type out.
var refusedArchs = map[string]string{"DeepseekV4ForCausalLM": "deepseek_v4"}

// refusal returns the error for a model_type (or architectures[0]) gpumem
// refuses by name, or nil.
func refusal(file, mt, arch string) error {
	why, ok := refusedFamilies[mt]
	if !ok {
		why, ok = refusedFamilies[refusedArchs[arch]]
	}
	if !ok {
		return nil
	}
	return fmt.Errorf("%s: model_type %q (architecture %q) is not supported: %s: %w", file, mt, arch, why, ErrUnsupportedArchitecture)
}
