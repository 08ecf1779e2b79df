package model

// unreadVLMs are multimodal families gpumem recognises but does not read
// yet, with what is missing. Their configs are refused naming the family
// (wrapping ErrUnsupportedArchitecture), never read as another family:
// phi4mm, for one, states a Phi-3 text model at its top level, which the
// generic reading would count without its towers and adapters.
var unreadVLMs = map[string]string{
	"idefics3":  "its SigLIP-style tower and pixel-shuffle connector are not read yet",
	"smolvlm":   "its SigLIP-style tower and pixel-shuffle connector are not read yet",
	"internvl":  "the transformers layout of InternVL is not read yet; the remote-code releases (internvl_chat) are",
	"glm4v":     "its vision tower and merger are not read yet",
	"glm4v_moe": "its vision tower and merger are not read yet",
	"kimi_k25":  "its MoonViT tower is not read yet, and its compressed-tensors INT4 experts are not counted",
	"gemma3n":   "its MobileNet-v5 vision tower, audio conformer, AltUp and Laurel blocks are not read yet",
	"phi4mm":    "its SigLIP tower, audio conformer and vision/speech LoRA adapters are not read yet",
}

// refuseUnread returns the reader of a family in unreadVLMs: it records
// an error naming the model_type and what gpumem cannot read of it.
func refuseUnread(mt string) reader {
	return func(c *config, _ *Model, _ *builder) {
		if c.st.err != nil {
			return
		}
		c.st.err = &ConfigError{File: c.st.file, Key: c.prefix + "model_type",
			Want: "a family gpumem reads (" + mt + ": " + unreadVLMs[mt] + ")", Err: ErrUnsupportedArchitecture}
	}
}

// unreadArchs maps the architectures[0] of the families in unreadVLMs to
// their model_type, for configs that name only the class.
var unreadArchs = map[string]string{
	"Idefics3ForConditionalGeneration": "idefics3",
	"SmolVLMForConditionalGeneration":  "smolvlm",
	"InternVLForConditionalGeneration": "internvl",
	"Glm4vForConditionalGeneration":    "glm4v",
	"Glm4vMoeForConditionalGeneration": "glm4v_moe",
	"KimiK25ForConditionalGeneration":  "kimi_k25",
	"Gemma3nForConditionalGeneration":  "gemma3n",
	"Phi4MMForCausalLM":                "phi4mm",
}

// addUnread adds the refusals of unreadVLMs to the readers table and
// their classes to archTypes, leaving any family a reader exists for.
func addUnread(readers map[string]reader) {
	for mt := range unreadVLMs {
		if _, ok := readers[mt]; !ok {
			readers[mt] = refuseUnread(mt)
		}
	}
	for arch, mt := range unreadArchs {
		if _, ok := archTypes[arch]; !ok {
			archTypes[arch] = mt
		}
	}
}
