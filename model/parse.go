package model

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"

	"github.com/gpumem/gpumem/internal/fsutil"
)

// ConfigFile is the name of a Hugging Face model configuration.
const ConfigFile = "config.json"

// MaxConfigSize is the largest config.json (or preprocessor_config.json)
// read, in bytes. Real configs are a few KiB; the largest, classifiers
// with tens of thousands of labels in id2label, are about a MiB.
const MaxConfigSize = 16 << 20

// PreprocessorFile is the image processor configuration of a VLM, read
// for the image size when present next to config.json.
const PreprocessorFile = "preprocessor_config.json"

// Parse reads a Hugging Face config.json and returns the model it
// describes with its parameter inventory. Errors name config.json and the
// offending key; see [ParseFile] to name another file.
func Parse(data []byte) (*Model, error) {
	return ParseFile(ConfigFile, data)
}

// ParseFile is [Parse] for a config read from the named file; the name
// only appears in error messages and Model.ID.
func ParseFile(name string, data []byte) (*Model, error) {
	c, err := decodeConfig(name, data)
	if err != nil {
		return nil, err
	}
	m, err := build(c)
	if err != nil {
		return nil, err
	}
	m.ID = name
	return m, nil
}

// build picks the family reader for c and runs it.
func build(c *config) (*Model, error) {
	mt := c.str("model_type", "")
	archs := c.strs("architectures")
	if err := c.err(); err != nil {
		return nil, err
	}
	arch := ""
	if len(archs) > 0 {
		arch = archs[0]
	}
	r, err := pickReader(c, mt, arch)
	if err != nil {
		return nil, err
	}
	m := &Model{Architecture: arch, ModelType: mt}
	m.TorchDtype = c.str("torch_dtype", c.str("dtype", ""))
	if t := c.sub("text_config"); t != nil && m.TorchDtype == "" {
		m.TorchDtype = t.str("torch_dtype", t.str("dtype", "")) // Qwen3-VL states it there only
	}
	b := &builder{}
	r(c, m, b)
	if headless(m) {
		dropLMHead(c, m, b)
	}
	m.Quant = readQuant(c)
	if err := c.err(); err != nil {
		return nil, err
	}
	if b.err == nil {
		b.err = checkTotal(b.mods)
	}
	if b.err != nil {
		return nil, fmt.Errorf("%s: %w", c.st.file, b.err)
	}
	m.Modules = b.mods
	m.Warnings = c.st.warnings
	return m, nil
}

// checkTotal checks that the parameter total fits in an int64. Each
// module's count is checked as it is built; their sum is checked here,
// once, so that every sum over modules (the total, a stack, a component,
// a layer, the active parameters) is a sum of non-negative counts below
// a total that fits, and none can wrap.
func checkTotal(mods []Module) error {
	var total int64
	for _, mod := range mods {
		if mod.Params > math.MaxInt64-total {
			return fmt.Errorf("the parameter total overflows int64 (more than %d parameters) at %s: check the sizes, layer and expert counts", int64(math.MaxInt64), mod.Name)
		}
		total += mod.Params
	}
	return nil
}

// pickReader finds the reader for model_type, then for architectures[0],
// then falls back to a generic dense decoder when the config holds only
// what that reading understands (see genericReading).
func pickReader(c *config, mt, arch string) (reader, error) {
	if err := refusal(c.st.file, mt, arch); err != nil {
		return nil, err
	}
	t, ok := mt, true
	if _, known := readers[mt]; !known {
		t, ok = archTypes[arch]
	}
	if ok {
		if err := checkDenseFamily(c, t, mt, arch); err != nil {
			return nil, err
		}
		return readers[t], nil
	}
	if err := genericReading(c, mt, arch); err != nil {
		return nil, err
	}
	return readGeneric, nil
}

// readGeneric reads an unknown dense decoder as Llama (with its
// layer_types, which the generic checks allow only for attention kinds).
func readGeneric(c *config, m *Model, b *builder) {
	m.Text = readStack(c, llamaDefaults)
	readLayerTypes(c, &m.Text)
	buildLlama(c, &m.Text, b, "model")
}

// readQuant reads quantization_config, if present.
func readQuant(c *config) *Quantization {
	q := c.sub("quantization_config")
	if q == nil {
		return nil
	}
	out := &Quantization{
		Method:      q.str("quant_method", ""),
		Bits:        q.count("bits", 0),
		GroupSize:   q.intIn("group_size", 0, -1, maxDim),
		SkipModules: q.strs("modules_to_not_convert"),
		Raw:         map[string]any{},
	}
	if out.Method == "" && q.boolean("load_in_4bit", false) {
		out.Method, out.Bits = "bitsandbytes", 4
	}
	if out.Method == "" && q.boolean("load_in_8bit", false) {
		out.Method, out.Bits = "bitsandbytes", 8
	}
	if bs := q.ints("weight_block_size", 1, maxDim); len(bs) > 0 && out.GroupSize == 0 {
		out.GroupSize = bs[0]
	}
	if out.Bits == 0 {
		switch out.Method {
		case "fp8":
			out.Bits = 8
		case "mxfp4":
			out.Bits = 4
		}
	}
	for k, v := range q.m {
		switch k {
		case "quant_method", "bits", "group_size", "modules_to_not_convert":
		default:
			out.Raw[k] = v
		}
	}
	return out
}

// ParseFS reads dir/config.json from fsys, and dir/preprocessor_config.json
// when present (for a VLM's image size). Model.ID is dir.
func ParseFS(fsys fs.FS, dir string) (*Model, error) {
	name := path.Join(dir, ConfigFile)
	data, err := fsutil.ReadFS(fsys, name, MaxConfigSize)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	m, err := ParseFile(name, data)
	if err != nil {
		return nil, err
	}
	pre := path.Join(dir, PreprocessorFile)
	if data, err := fsutil.ReadFS(fsys, pre, MaxConfigSize); err == nil {
		if err := applyPreprocessor(m, pre, data); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", pre, err)
	}
	m.ID = dir
	return m, nil
}

// applyPreprocessor reads the image side a CLIP-style image processor
// feeds the tower — crop_size when it crops, else size — and updates the
// tokens per image. Towers with a fixed token budget (Gemma 3, Mllama
// tiles, Qwen-VL's dynamic resolution) keep their own.
func applyPreprocessor(m *Model, file string, data []byte) error {
	if m.Vision == nil {
		return nil
	}
	c, err := decodeConfig(file, data)
	if err != nil {
		return err
	}
	size := imageSide(c, "crop_size")
	if size == 0 {
		size = imageSide(c, "size")
	}
	if err := c.err(); err != nil {
		return err
	}
	switch m.ModelType {
	case "llava", "phi3_v":
	default:
		return nil
	}
	if size >= m.Vision.PatchSize && size > 0 {
		v := m.Vision
		v.ImageSize = size
		if v.Resize == ResizeNative {
			// Pixtral under LLaVA: the processor's longest_edge caps the
			// image, and its row breaks count (Vision.Image).
			v.MaxImageSize = size
			v.TokensPerImage = v.Image(0).Tokens
		} else {
			v.TokensPerImage = tokensPerImage(v)
		}
	}
	return nil
}

// imageSide reads an image side from key, which is a number or an object
// with height, shortest_edge or longest_edge.
func imageSide(c *config, key string) int {
	s := c.sub(key)
	if s == nil {
		if _, isObj := c.m[key].(map[string]any); !isObj && c.has(key) {
			return c.intIn(key, 0, 0, maxDim)
		}
		return 0
	}
	for _, k := range []string{"height", "shortest_edge", "longest_edge"} {
		if v := s.intIn(k, 0, 0, maxDim); v > 0 {
			return v
		}
	}
	return 0
}
