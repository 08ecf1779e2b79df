// Package yamldoc decodes a YAML (or JSON) config into generic values in
// time linear in its size, with repeated keys as errors that name them.
//
// yaml.v3 and its maintained fork go.yaml.in/yaml/v3 check a mapping for
// repeated keys by comparing every key with every later one
// (decoder.mapping in decode.go), so decoding a 600 KB file of 60,000 keys
// into an interface value takes tens of seconds (measured: 42 s with
// go.yaml.in/yaml/v3 v3.0.6). Parsing into a yaml.Node tree does no such
// check and is linear (0.3 s for the same file), so [Decode] parses into
// nodes and builds the values itself, checking keys with a map.
//
// Scalars are resolved by yaml's own decoder, one at a time, so they come
// out exactly as yaml.Unmarshal into an interface value gives them (int,
// float64, bool, string, nil, time.Time for a date).
// Mappings become map[string]any keyed by the key as written; sequences
// become []any. Anchors and aliases work, within a bound on how many
// values aliases may expand to (a "billion laughs" document fails fast),
// and so do merge keys ("<<").
package yamldoc

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// MaxAliasValues bounds the values that aliases expand to in one document.
// Real configs alias a handful of small mappings; a document built to
// explode (each alias naming a sequence of aliases) reaches billions.
const MaxAliasValues = 1 << 16

// MaxKeys bounds the mapping keys of one document, aliases expanded. The
// configs read this way (job files, DeepSpeed and trainer configs, GPU
// lists) have tens to hundreds of keys; a file of 60,000 is not a config,
// and listing each as unknown would bury the answer.
const MaxKeys = 10000

// maxDepth bounds the nesting of collections, and of aliases within them.
const maxDepth = 1000

// DuplicateKeyError reports a mapping key given twice.
type DuplicateKeyError struct {
	// Path is the key's dotted path from the top of the document, with
	// sequence elements as [i]: "deepspeed.zero_optimization.stage".
	Path string
	// Key is the key as written.
	Key string
	// First and Line are the lines of the first and the second occurrence.
	First, Line int
}

// Error names the key and both lines.
func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("key %q is given twice (lines %d and %d)", e.Path, e.First, e.Line)
}

// Decode parses data as one YAML document (JSON is YAML too) and returns
// its value: nil for an empty document. Errors are yaml's syntax errors,
// a [*DuplicateKeyError], or a description of an unusable structure (a
// key that is not a scalar, more than [MaxKeys] keys, aliases expanding
// too far).
func Decode(data []byte) (any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil
	}
	d := &decoder{active: map[*yaml.Node]bool{}}
	return d.value(doc.Content[0], "", 0)
}

// decoder builds values from nodes.
type decoder struct {
	keys       int                 // mapping keys read so far
	aliasDepth int                 // > 0 while expanding an alias
	expanded   int                 // values built inside aliases
	active     map[*yaml.Node]bool // anchors being expanded (cycle check)
}

// value builds the value of n, found at path.
func (d *decoder) value(n *yaml.Node, path string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("line %d: nested deeper than %d levels", n.Line, maxDepth)
	}
	if d.aliasDepth > 0 {
		if d.expanded++; d.expanded > MaxAliasValues {
			return nil, fmt.Errorf("line %d: aliases expand to more than %d values", n.Line, MaxAliasValues)
		}
	}
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.ShortTag() { // the tag resolved as yaml does
		case "!!str":
			return n.Value, nil
		case "!!null":
			return nil, nil
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, err
		}
		return v, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			v, err := d.value(c, fmt.Sprintf("%s[%d]", path, i), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		if err := d.mapping(n, path, depth, m, map[string]int{}, false); err != nil {
			return nil, err
		}
		return m, nil
	case yaml.AliasNode:
		return d.alias(n, path, depth)
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
}

// alias expands an alias node, refusing one that contains itself.
func (d *decoder) alias(n *yaml.Node, path string, depth int) (any, error) {
	target := n.Alias
	if target == nil {
		return nil, fmt.Errorf("line %d: unknown alias %q", n.Line, n.Value)
	}
	if d.active[target] {
		return nil, fmt.Errorf("line %d: alias %q contains itself", n.Line, n.Value)
	}
	d.active[target] = true
	d.aliasDepth++
	v, err := d.value(target, path, depth+1)
	d.aliasDepth--
	delete(d.active, target)
	return v, err
}

// mapping adds the keys of n to m. lines records the line of each key set
// so far. merged is true for a mapping merged in with "<<": its keys give
// way to those already in m instead of repeating them.
func (d *decoder) mapping(n *yaml.Node, path string, depth int, m map[string]any, lines map[string]int, merged bool) error {
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMerge(k) {
			merges = append(merges, v)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: a mapping key must be a plain value, not a collection or an alias", k.Line)
		}
		if d.keys++; d.keys > MaxKeys {
			return fmt.Errorf("line %d: more than %d keys; this is not a config file", k.Line, MaxKeys)
		}
		if first, ok := lines[k.Value]; ok {
			if merged {
				continue // an explicit key, or an earlier merged one, wins
			}
			return &DuplicateKeyError{Path: join(path, k.Value), Key: k.Value, First: first, Line: k.Line}
		}
		val, err := d.value(v, join(path, k.Value), depth+1)
		if err != nil {
			return err
		}
		m[k.Value], lines[k.Value] = val, k.Line
	}
	// Merged keys come after the explicit ones, which override them; of
	// several merged mappings, the first listed wins (YAML merge key
	// type, yaml.org/type/merge.html).
	for _, v := range merges {
		if err := d.merge(v, path, depth, m, lines); err != nil {
			return err
		}
	}
	return nil
}

// merge adds the mappings a "<<" key names: a mapping, an alias of one,
// or a sequence of those.
func (d *decoder) merge(v *yaml.Node, path string, depth int, m map[string]any, lines map[string]int) error {
	if depth > maxDepth {
		return fmt.Errorf("line %d: nested deeper than %d levels", v.Line, maxDepth)
	}
	switch v.Kind {
	case yaml.MappingNode:
		return d.mapping(v, path, depth+1, m, lines, true)
	case yaml.AliasNode:
		if v.Alias == nil || d.active[v.Alias] {
			return fmt.Errorf("line %d: merge of alias %q that is unknown or contains itself", v.Line, v.Value)
		}
		d.active[v.Alias] = true
		d.aliasDepth++
		err := d.merge(v.Alias, path, depth+1, m, lines)
		d.aliasDepth--
		delete(d.active, v.Alias)
		return err
	case yaml.SequenceNode:
		for _, c := range v.Content {
			if c.Kind == yaml.SequenceNode {
				return errMergeSequence(c)
			}
			if err := d.merge(c, path, depth+1, m, lines); err != nil {
				return err
			}
		}
		return nil
	}
	return errMergeSequence(v)
}

func errMergeSequence(v *yaml.Node) error {
	return fmt.Errorf("line %d: a merge key (<<) takes a mapping, an alias of one, or a list of those", v.Line)
}

// isMerge reports whether k is the merge key "<<" (untagged or !!merge).
func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "" || k.Tag == "!" || k.ShortTag() == "!!merge")
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// IsDuplicate reports whether err is a [*DuplicateKeyError], which
// callers report as it is rather than as a syntax error.
func IsDuplicate(err error) bool {
	_, ok := errors.AsType[*DuplicateKeyError](err)
	return ok
}
