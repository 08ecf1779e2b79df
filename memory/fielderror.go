package memory

import (
	"fmt"
	"strings"
)

// FieldError is a problem with the value of a job setting. Key is the
// JSON name of the [Job] field it is about ("seq_len"); a front end
// points at its own input with it: the CLI at a flag, the HTTP API at a
// request key, the web page at a form field.
//
// The message may name settings, its own and others'. It is kept as a
// template in which a setting is written {key} or {key=value} (the value
// may hold a formatting verb, {tp=%d}); [FieldError.Error] names them as
// JSON does ("seq_len", "tp=3"), and [FieldError.Render] lets a front end
// name them in its own words ("--seq-len", "--tp 3"). [RenderError] does
// the same for an error that wraps field errors.
type FieldError struct {
	// Key is the JSON name of the Job field the problem is about.
	Key string

	format string
	args   []any
}

// FieldErrorf returns a [FieldError] about key whose message is format,
// with settings written {key} or {key=value}, formatted with args as
// [fmt.Sprintf] does. A %w verb wraps its error, as in [fmt.Errorf].
func FieldErrorf(key, format string, args ...any) *FieldError {
	return &FieldError{Key: key, format: format, args: args}
}

// Error returns the message with each setting named by [KeyName].
func (e *FieldError) Error() string { return e.Render(KeyName) }

// Render returns the message with each setting named by name: name(key,
// "") for {key} and name(key, value) for {key=value}, where value is the
// template's text (a verb such as %d is formatted afterwards). Field
// errors among the arguments are rendered with name too.
func (e *FieldError) Render(name func(key, value string) string) string {
	format := expandKeys(e.format, name)
	args := e.args
	if strings.Contains(format, "%w") || hasError(args) {
		format = strings.ReplaceAll(format, "%w", "%v")
		args = make([]any, len(e.args))
		for i, a := range e.args {
			if err, ok := a.(error); ok {
				a = RenderError(err, name)
			}
			args[i] = a
		}
	}
	return fmt.Sprintf(format, args...)
}

// Unwrap returns the error a %w verb of the message wraps, or nil.
func (e *FieldError) Unwrap() error {
	if !strings.Contains(e.format, "%w") {
		return nil
	}
	for _, a := range e.args {
		if err, ok := a.(error); ok {
			return err
		}
	}
	return nil
}

// KeyName names a setting as the JSON of a job does: the key, or
// key=value when a value is given.
func KeyName(key, value string) string {
	if value == "" {
		return key
	}
	return key + "=" + value
}

// RenderError returns err's message with the field errors it wraps
// rendered by name (see [FieldError.Render]) instead of in JSON's words.
// Each wrapper must include the message of the error it wraps, as
// fmt.Errorf's %w does.
func RenderError(err error, name func(key, value string) string) string {
	msg := err.Error()
	var walk func(error)
	walk = func(err error) {
		if fe, ok := err.(*FieldError); ok {
			msg = strings.Replace(msg, fe.Error(), fe.Render(name), 1)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			if inner := u.Unwrap(); inner != nil {
				walk(inner)
			}
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				walk(inner)
			}
		}
	}
	walk(err)
	return msg
}

// hasError reports whether an argument is an error, which may be or
// wrap a field error.
func hasError(args []any) bool {
	for _, a := range args {
		if _, ok := a.(error); ok {
			return true
		}
	}
	return false
}

// expandKeys replaces each {key} and {key=value} of a message template
// with name(key, value). Braces around anything else stay as they are.
func expandKeys(format string, name func(key, value string) string) string {
	if !strings.Contains(format, "{") {
		return format
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(format, '{')
		if i < 0 {
			break
		}
		j := strings.IndexByte(format[i:], '}')
		if j < 0 {
			break
		}
		key, value, _ := strings.Cut(format[i+1:i+j], "=")
		if !isKey(key) {
			b.WriteString(format[:i+1])
			format = format[i+1:]
			continue
		}
		b.WriteString(format[:i])
		b.WriteString(name(key, value))
		format = format[i+j+1:]
	}
	b.WriteString(format)
	return b.String()
}

// isKey reports whether s is spelled as a Job JSON key: lower-case
// letters, digits and underscores, starting with a letter.
func isKey(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
