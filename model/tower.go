package model

import (
	"slices"
	"sort"
	"strings"
)

// towerReader reads a vision tower from its config vc and adds its
// modules under attr, the attribute the wrapper holds the tower in
// (e.g. "model.vision_tower"), following the tower's own module layout.
type towerReader func(vc *config, b *builder, attr string) Vision

// towers maps a vision_config's model_type to the reader of that tower.
// A wrapper that builds its tower with AutoModel.from_config (LLaVA,
// Mistral 3) accepts any of them; one that fixes the tower class names
// the ones it accepts.
var towers = map[string]towerReader{
	"clip_vision_model":   readCLIPTower,
	"siglip_vision_model": readSiglipTower,
	"pixtral":             readPixtralTower,
}

// towerNames lists the towers in towers, sorted, for error messages.
func towerNames() string {
	names := make([]string, 0, len(towers))
	for n := range towers {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// readTower reads the vision tower described by c's sub-config key with
// the reader its model_type names (def when the sub-config has none),
// adding its modules under attr. allowed, when given, lists the towers
// the wrapper can build. A missing sub-config or an unknown tower is an
// error naming the key: the tower's size cannot be guessed.
func readTower(c *config, key, def, attr string, b *builder, allowed ...string) *Vision {
	vc := needSub(c, key, "the vision tower's config (an object): the tower's size cannot be inferred without it")
	if vc == nil {
		return &Vision{}
	}
	mt := vc.str("model_type", def)
	r, ok := towers[mt]
	if !ok || (len(allowed) > 0 && !slices.Contains(allowed, mt)) {
		want := "a supported vision tower (" + towerNames() + ")"
		if len(allowed) > 0 {
			want = "a vision tower this model builds (" + strings.Join(allowed, ", ") + ")"
		}
		vc.fail("model_type", want, mt)
		return &Vision{}
	}
	v := r(vc, b, attr)
	v.Tower = mt
	return &v
}

// needSub returns the sub-config at key, or records an error naming key
// and saying what it must describe and returns nil. A multimodal
// wrapper's sub-configs size whole stacks: filling one from its config
// class's defaults would count a model nobody released.
func needSub(c *config, key, want string) *config {
	s := c.sub(key)
	if s == nil {
		c.fail(key, want, nil)
	}
	return s
}

// needText returns the language model's config of a VLM: text_config,
// required (see needSub).
func needText(c *config) *config {
	t := needSub(c, "text_config", "the language model's config (an object): its size cannot be inferred without it")
	if t == nil {
		return c.sub("text_config").orEmpty(c, "text_config")
	}
	return textSub(c)
}

// fixedTower returns the tower config at key of a wrapper that builds its
// tower class itself, whatever the config's model_type: the config is
// required (see needSub), and a model_type it states must be one of
// names, else the config describes a tower this model cannot build.
func fixedTower(c *config, key string, names ...string) *config {
	vc := needSub(c, key, "the vision tower's config (an object): the tower's size cannot be inferred without it")
	if vc == nil {
		return c.sub(key).orEmpty(c, key)
	}
	if mt := vc.str("model_type", ""); mt != "" && !slices.Contains(names, mt) {
		vc.fail("model_type", "a vision tower this model builds ("+strings.Join(names, ", ")+")", mt)
	}
	return vc
}
