package model

import (
	"errors"
	"fmt"
)

// ErrUnsupportedArchitecture is wrapped by errors for a config.json whose
// model_type (or architectures[0]) has no reader and lacks the keys a
// generic dense decoder needs.
var ErrUnsupportedArchitecture = errors.New("unsupported architecture")

// ErrNotFound is wrapped by [Load] and [Lookup] when a name is neither a
// catalog id, an alias nor an existing path.
var ErrNotFound = errors.New("model not found")

// ConfigError is a problem with one key of a config file: missing, of the
// wrong type, or out of range. Its message names the file, the key and what
// was expected, e.g.
//
//	config.json: num_attention_heads: want a positive integer, got -3
type ConfigError struct {
	// File is the file the key was read from, e.g. "config.json".
	File string
	// Key is the dotted key path, e.g. "text_config.hidden_size"; empty
	// when the problem is the file as a whole (malformed JSON).
	Key string
	// Want says what was expected, e.g. "a positive integer".
	Want string
	// Got is the offending value as written in the file; empty when missing.
	Got string
	// Err is an underlying error (a JSON syntax error), if any.
	Err error
}

// Error formats the problem as "file: key: want W, got G".
func (e *ConfigError) Error() string {
	msg := e.File
	if e.Key != "" {
		msg += ": " + e.Key
	}
	switch {
	case e.Err != nil && e.Want == "":
		return fmt.Sprintf("%s: %v", msg, e.Err)
	case e.Err != nil:
		return fmt.Sprintf("%s: want %s: %v", msg, e.Want, e.Err)
	case e.Got == "":
		return fmt.Sprintf("%s: missing, want %s", msg, e.Want)
	}
	return fmt.Sprintf("%s: want %s, got %s", msg, e.Want, e.Got)
}

// Unwrap returns the underlying error, if any.
func (e *ConfigError) Unwrap() error { return e.Err }
