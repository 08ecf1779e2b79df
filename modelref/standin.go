package modelref

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strings"

	"github.com/gpumem/gpumem/hub"
	"github.com/gpumem/gpumem/model"
)

// recoverLocate stands in for a reference [Locate] could not place: a
// missing path by its last component, a name missing from the catalog by
// the catalog model it is a release of. Without a stand-in the error
// gets a hint when one helps.
func (o Options) recoverLocate(ctx context.Context, loc Location, err error) (*Source, error) {
	s := parse(loc.Ref)
	switch {
	case loc.Ref == "":
	case s.path && errors.Is(err, fs.ErrNotExist) && !o.Exact:
		return o.byLastComponent(ctx, loc.Ref, err)
	case !s.path && errors.Is(err, model.ErrNotFound):
		if id, ok := model.VariantOf(s.name); ok && !o.Exact {
			return releaseOf(loc.Ref, id, fmt.Sprintf("%q is not a catalog id or alias", loc.Ref))
		}
		if org, ok := model.PublisherOf(s.name); ok && hub.ValidateRepo(org+"/"+s.name) == nil {
			return nil, fmt.Errorf("%w (a Hub id names its organisation: %s/%s?)", err, org, s.name)
		}
	}
	return nil, err
}

// recoverHub stands in for a Hub model the Hub cannot supply (offline,
// unreachable, no Hub) with the catalog model it is a release of, or
// words the failure for the user.
func (o Options) recoverHub(loc Location, err error) (*Source, error) {
	why, unavailable := hubUnavailable(err)
	if unavailable && !o.Exact && loc.Hub.Revision == "" {
		if id, ok := model.VariantOf(loc.Hub.Repo); ok {
			return releaseOf(loc.Ref, id, fmt.Sprintf("%s is not in the built-in catalog and %s", loc.Hub, why))
		}
	}
	hint := closestHint(loc.Hub.Repo)
	if unavailable && !errors.Is(err, hub.ErrOffline) {
		// The network error's details (DNS, dial, TLS) say nothing the
		// user can act on that these words do not.
		return nil, &refError{msg: fmt.Sprintf("%s: not in the built-in catalog, and %s%s", loc.Hub, why, hint), err: err}
	}
	if errors.Is(err, hub.ErrNotFound) || errors.Is(err, hub.ErrOffline) {
		return nil, fmt.Errorf("%w%s", err, hint)
	}
	return nil, err
}

// hubUnavailable says why the Hub could not answer, when it could not:
// no Hub client, offline mode, or no answer.
func hubUnavailable(err error) (string, bool) {
	var ne net.Error
	switch {
	case errors.Is(err, errNoHub):
		return "no Hub is available here", true
	case errors.Is(err, hub.ErrOffline):
		return "the Hub was not asked (offline mode)", true
	case errors.Is(err, hub.ErrUnreachable) && errors.As(err, &ne) && ne.Timeout():
		return "the Hub could not be reached (timed out)", true
	case errors.Is(err, hub.ErrUnreachable):
		return "the Hub could not be reached", true
	}
	return "", false
}

// closestHint names the catalog models closest to a name that could not
// be read, and the way out.
func closestHint(name string) string {
	if near := model.Suggest(name, 3); len(near) > 0 {
		return fmt.Sprintf(" (closest: %s; or pass a path to its config.json or model folder)", strings.Join(near, ", "))
	}
	return "; pass a path to its config.json or model folder instead"
}

// releaseOf reads the catalog model id in place of ref, a release of it,
// with a note that begins with subject.
func releaseOf(ref, id, subject string) (*Source, error) {
	src, err := loadCatalog(Location{Ref: ref, Kind: Catalog, Hub: hub.Ref{Repo: id}})
	if err != nil {
		return nil, err
	}
	_, name := splitRepo(ref)
	if _, idName := splitRepo(id); strings.EqualFold(name, idName) {
		// The same name without its organisation: the model itself.
		return src.note("%s; read as the catalog's %s", subject, id), nil
	}
	return src.note("%s; read as the catalog's %s, assuming this release of it (-Instruct, -chat, -it, -Base, -pt or a date) "+
		"keeps its config.json (releases can differ in vocabulary, context length or image size; give the model's config.json "+
		"for an exact count)", subject, id), nil
}

// byLastComponent reads a path that does not exist here — a path from a
// training config written on another machine — by its last component:
// the catalog model of that name, the Hub repository of that name under
// the organisation that publishes the catalog's models of the family,
// or the catalog model it is a release of. A path into a Hugging Face
// cache (models--org--name/snapshots/<commit>) names its repository and
// commit. With none of them, the error is statErr with a hint.
func (o Options) byLastComponent(ctx context.Context, ref string, statErr error) (*Source, error) {
	missing := fmt.Sprintf("%s does not exist here", ref)
	parts := pathParts(ref)
	if r, ok := cacheRef(parts); ok {
		return o.byHubName(ctx, ref, statErr, r, fmt.Sprintf("%s; the repository its Hugging Face cache path names, %s,", missing, r.Repo),
			"the repository and commit its Hugging Face cache path names")
	}
	if len(parts) == 0 || hub.ValidateRepo(parts[len(parts)-1]) != nil {
		return nil, statErr
	}
	name := parts[len(parts)-1]
	// The catalog model of that name, by alias or by its id's name.
	if id, err := model.CatalogID(name); err == nil {
		return catalogNamed(ref, id, missing)
	}
	if id, ok := model.VariantOf(name); ok {
		if _, idName := splitRepo(id); strings.EqualFold(name, idName) {
			return catalogNamed(ref, id, missing)
		}
	}
	// The Hub repository of that name under the publisher of the
	// catalog's models of the family.
	var r hub.Ref
	how := ""
	if org, ok := model.PublisherOf(name); ok {
		r = hub.Ref{Repo: org + "/" + name}
		how = fmt.Sprintf("by its last component (%s publishes the catalog's models of that family)", org)
	}
	return o.byHubName(ctx, ref, statErr, r, fmt.Sprintf("%s; its last component %s", missing, name), how)
}

// byHubName reads the Hub repository r (when set) for a path that does
// not exist here, else the catalog model its name is a release of;
// subject starts the note, how says why r was read.
func (o Options) byHubName(ctx context.Context, ref string, statErr error, r hub.Ref, subject, how string) (*Source, error) {
	notHub := ""
	if r.Repo != "" && o.hub() != nil {
		src, err := o.load(ctx, Location{Ref: ref, Kind: Hub, Hub: r})
		why, unavailable := hubUnavailable(err)
		switch {
		case err == nil:
			return src.note("%s does not exist here; read as the Hub's %s, %s", ref, r, how), nil
		case unavailable:
			notHub = fmt.Sprintf(" (not read as the Hub's %s: %s)", r, why)
		case errors.Is(err, hub.ErrNotFound) || errors.Is(err, hub.ErrGated) || errors.Is(err, hub.ErrUnauthorized):
			notHub = fmt.Sprintf(" (not read as the Hub's %s: %s)", r, hubRefusal(err))
		default:
			return nil, err // the Hub's config itself is wrong: say so
		}
	}
	name := r.Repo
	if name == "" {
		parts := pathParts(ref)
		name = parts[len(parts)-1]
	}
	if id, ok := model.VariantOf(name); ok {
		return releaseOf(ref, id, fmt.Sprintf("%s is not in the built-in catalog%s", subject, notHub))
	}
	_, bare := splitRepo(name)
	return nil, fmt.Errorf("%w; nor does it name a model here%s%s", statErr, notHub, closestHint(bare))
}

// catalogNamed reads the catalog model id that a missing path's last
// component names.
func catalogNamed(ref, id, missing string) (*Source, error) {
	src, err := loadCatalog(Location{Ref: ref, Kind: Catalog, Hub: hub.Ref{Repo: id}})
	if err != nil {
		return nil, err
	}
	return src.note("%s; read by its last component as the catalog's %s", missing, id), nil
}

// hubRefusal words a Hub answer that refused a repository.
func hubRefusal(err error) string {
	switch {
	case errors.Is(err, hub.ErrNotFound):
		return "not on the Hub"
	case errors.Is(err, hub.ErrUnauthorized):
		return "the Hub rejected the token"
	}
	return "gated or private"
}

// pathParts splits a path at "/" and "\" (a path from a config file may
// come from another system), without empty and "." parts and without a
// final config.json.
func pathParts(p string) []string {
	parts := strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' })
	out := parts[:0]
	for _, s := range parts {
		if s != "." {
			out = append(out, s)
		}
	}
	if n := len(out); n > 0 && strings.EqualFold(out[n-1], model.ConfigFile) {
		out = out[:n-1]
	}
	return out
}

// cacheRef reads the repository and commit from a path into a Hugging
// Face cache: .../models--org--name/snapshots/<commit>[/...] (the layout
// of [hub.Cache]).
func cacheRef(parts []string) (hub.Ref, bool) {
	for i := 0; i+2 < len(parts); i++ {
		dir, ok := strings.CutPrefix(parts[i], "models--")
		if !ok || parts[i+1] != "snapshots" || !hub.IsCommit(parts[i+2]) {
			continue
		}
		r := hub.Ref{Repo: strings.ReplaceAll(dir, "--", "/"), Revision: parts[i+2]}
		if r.Validate() == nil {
			return r, true
		}
	}
	return hub.Ref{}, false
}

// splitRepo splits "org/name" into its parts; a name without "/" has no
// organisation.
func splitRepo(s string) (org, name string) {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return "", s
}

// refError is an error worded for the user, wrapping the error it
// replaces so that callers can still test for it.
type refError struct {
	msg string
	err error
}

func (e *refError) Error() string { return e.msg }
func (e *refError) Unwrap() error { return e.err }
