package model

// reader fills m (its stacks and layer types) from config c and adds the
// parameter inventory to b. Problems are recorded on c.
type reader func(c *config, m *Model, b *builder)

// readers maps config.json's model_type to the family reader. This table
// and archTypes are the only place a family is chosen. It is filled in
// init because VLM readers look up their language model's reader in it.
var readers map[string]reader

func init() {
	readers = familyReaders()
	addUnread(readers) // multimodal families refused by name (unread.go)
}

func familyReaders() map[string]reader {
	return map[string]reader{
		// Llama-style dense decoders (llama.go)
		"llama":   readLlama,
		"mistral": readMistral,
		"qwen2":   readQwen2,
		"qwen3":   readQwen3,
		// mixtures of experts
		"mixtral":     readMixtral,
		"qwen2_moe":   readQwen2MoE,
		"qwen3_moe":   readQwen3MoE,
		"olmoe":       readOLMoE,
		"deepseek_v2": readDeepSeek,
		"deepseek_v3": readDeepSeek,
		"gpt_oss":     readGPTOSS,
		// Gemma
		"gemma":       readGemma,
		"gemma2":      readGemma2,
		"gemma3_text": readGemma3Text,
		"gemma3":      readGemma3,
		// Phi
		"phi":      readPhi,
		"phi-msft": readPhi,
		"phi3":     readPhi3,
		"phi3_v":   readPhi3V,
		// GPT-2 lineage and other older decoders
		"gpt2":            readGPT2,
		"gpt_bigcode":     readGPTBigCode,
		"gpt_neox":        readGPTNeoX,
		"falcon":          readFalcon,
		"RefinedWeb":      readFalcon,
		"RefinedWebModel": readFalcon,
		"bloom":           readBloom,
		"opt":             readOPT,
		"qwen":            readQwenV1,
		"stablelm":        readStableLM,
		// vision-language models
		"llava":      readLlava,
		"qwen2_vl":   readQwen2VL,
		"qwen2_5_vl": readQwen25VL,
		"qwen3_vl":   readQwen3VL,
		// language models of VLMs, when named in a text_config
		"qwen2_vl_text":   readQwen2,
		"qwen2_5_vl_text": readQwen2,
		"qwen3_vl_text":   readQwen3,
		"mllama":          readMllama,
		"llama4":          readLlama4,
		"llama4_text":     readLlama4Text,
		// multimodal wrappers whose text_config and vision_config go to
		// their own readers (tower.go), and their language models
		"qwen3_vl_moe":      readQwen3VLMoE,
		"qwen3_vl_moe_text": readQwen3VLMoEText,
		"mistral3":          readMistral3,
		"internvl_chat":     readInternVLChat,
		"gemma4":            readGemma4,
		"gemma4_text":       readGemma4Text,
		// hybrids: linear attention or SSM layers mixed with attention
		"qwen3_next":       readQwen3Next,
		"qwen3_5":          readQwen35,
		"qwen3_5_moe":      readQwen35MoE,
		"qwen3_5_text":     readQwen35Text,
		"qwen3_5_moe_text": readQwen35MoEText,
		"nemotron_h":       readNemotronH,
		"minimax_m1":       readMiniMaxM1,
		// encoders and encoder-decoders
		"bert": readBERT,
		"t5":   readT5,
		"bart": readBART,
		// text families of 2025–26 (one file each)
		"deepseek_v32":     readDeepSeekV32,
		"glm_moe_dsa":      readGLMMoEDSA,
		"glm4_moe":         readGLM4MoE,
		"minimax_m2":       readMiniMaxM2,
		"phimoe":           readPhiMoE,
		"ernie4_5":         readErnie45,
		"ernie4_5_moe":     readErnie45MoE,
		"hunyuan_v1_dense": readHunYuanDense,
		"hunyuan_v1_moe":   readHunYuanMoE,
		"hunyuan":          readHunYuanRemote,
		"seed_oss":         readSeedOSS,
		"olmo2":            readOLMo2,
		"olmo3":            readOLMo3,
		"smollm3":          readSmolLM3,
		"cohere":           readCohere,
		"cohere2":          readCohere2,
		"starcoder2":       readStarcoder2,
		"exaone4":          readEXAONE4,
		"apertus":          readApertus,
		"nemotron-nas":     readNemotronNAS,
		"xlm-roberta":      readXLMRoberta,
		"modernbert":       readModernBERT,
	}
}

// archTypes maps architectures[0] to a model_type in readers, for
// configs whose model_type is missing or a remote-code name.
var archTypes = map[string]string{
	"LlamaForCausalLM":                   "llama",
	"MistralForCausalLM":                 "mistral",
	"MixtralForCausalLM":                 "mixtral",
	"Qwen2ForCausalLM":                   "qwen2",
	"Qwen3ForCausalLM":                   "qwen3",
	"Qwen2MoeForCausalLM":                "qwen2_moe",
	"Qwen3MoeForCausalLM":                "qwen3_moe",
	"OlmoeForCausalLM":                   "olmoe",
	"DeepseekV2ForCausalLM":              "deepseek_v2",
	"DeepseekV3ForCausalLM":              "deepseek_v3",
	"GptOssForCausalLM":                  "gpt_oss",
	"GemmaForCausalLM":                   "gemma",
	"Gemma2ForCausalLM":                  "gemma2",
	"Gemma3ForCausalLM":                  "gemma3_text",
	"Gemma3ForConditionalGeneration":     "gemma3",
	"PhiForCausalLM":                     "phi",
	"Phi3ForCausalLM":                    "phi3",
	"Phi3VForCausalLM":                   "phi3_v",
	"GPT2LMHeadModel":                    "gpt2",
	"GPTBigCodeForCausalLM":              "gpt_bigcode",
	"GPTNeoXForCausalLM":                 "gpt_neox",
	"FalconForCausalLM":                  "falcon",
	"RWForCausalLM":                      "falcon",
	"BloomForCausalLM":                   "bloom",
	"OPTForCausalLM":                     "opt",
	"QWenLMHeadModel":                    "qwen",
	"StableLmForCausalLM":                "stablelm",
	"LlavaForConditionalGeneration":      "llava",
	"Qwen2VLForConditionalGeneration":    "qwen2_vl",
	"Qwen2_5_VLForConditionalGeneration": "qwen2_5_vl",
	"Qwen3VLForConditionalGeneration":    "qwen3_vl",
	"MllamaForConditionalGeneration":     "mllama",
	"Llama4ForConditionalGeneration":     "llama4",
	"Llama4ForCausalLM":                  "llama4_text",
	"BertModel":                          "bert",
	"Qwen3NextForCausalLM":               "qwen3_next",
	"Qwen3_5ForConditionalGeneration":    "qwen3_5",
	"Qwen3_5MoeForConditionalGeneration": "qwen3_5_moe",
	"Qwen3_5ForCausalLM":                 "qwen3_5_text",
	"Qwen3_5MoeForCausalLM":              "qwen3_5_moe_text",
	"NemotronHForCausalLM":               "nemotron_h",
	"MiniMaxM1ForCausalLM":               "minimax_m1",
	"BertForMaskedLM":                    "bert",
	"T5ForConditionalGeneration":         "t5",
	"BartForConditionalGeneration":       "bart",
	"BartModel":                          "bart",
	// multimodal wrappers whose sub-configs go to their own readers (tower.go)
	"Qwen3VLMoeForConditionalGeneration": "qwen3_vl_moe",
	"Mistral3ForConditionalGeneration":   "mistral3",
	"InternVLChatModel":                  "internvl_chat",
	"Gemma4ForConditionalGeneration":     "gemma4",
	"Gemma4ForCausalLM":                  "gemma4_text",
	// text families of 2025–26
	"DeepseekV32ForCausalLM":              "deepseek_v32",
	"GlmMoeDsaForCausalLM":                "glm_moe_dsa",
	"Glm4MoeForCausalLM":                  "glm4_moe",
	"MiniMaxM2ForCausalLM":                "minimax_m2",
	"PhimoeForCausalLM":                   "phimoe",
	"PhiMoEForCausalLM":                   "phimoe",
	"Ernie4_5ForCausalLM":                 "ernie4_5",
	"Ernie4_5_MoeForCausalLM":             "ernie4_5_moe",
	"HunYuanDenseV1ForCausalLM":           "hunyuan_v1_dense",
	"HunYuanMoEV1ForCausalLM":             "hunyuan_v1_moe",
	"SeedOssForCausalLM":                  "seed_oss",
	"Olmo2ForCausalLM":                    "olmo2",
	"Olmo3ForCausalLM":                    "olmo3",
	"SmolLM3ForCausalLM":                  "smollm3",
	"CohereForCausalLM":                   "cohere",
	"Cohere2ForCausalLM":                  "cohere2",
	"Starcoder2ForCausalLM":               "starcoder2",
	"Exaone4ForCausalLM":                  "exaone4",
	"ApertusForCausalLM":                  "apertus",
	"DeciLMForCausalLM":                   "nemotron-nas",
	"XLMRobertaModel":                     "xlm-roberta",
	"XLMRobertaForMaskedLM":               "xlm-roberta",
	"XLMRobertaForSequenceClassification": "xlm-roberta",
	"ModernBertModel":                     "modernbert",
	"ModernBertForMaskedLM":               "modernbert",
	// base models saved without their LM head (embedding checkpoints)
	"LlamaModel":   "llama",
	"MistralModel": "mistral",
	"Qwen2Model":   "qwen2",
	"Qwen3Model":   "qwen3",
	"Gemma2Model":  "gemma2",
}
