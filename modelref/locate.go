package modelref

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/gpumem/gpumem/hub"
	"github.com/gpumem/gpumem/model"
)

// Kind says where a model's config.json is read from.
type Kind string

// The kinds of [Location].
const (
	// Catalog is a model of the embedded catalog.
	Catalog Kind = "catalog"
	// File is a config.json (or another file) on this machine.
	File Kind = "file"
	// Folder is a model folder on this machine.
	Folder Kind = "folder"
	// Hub is a Hub repository, fetched or read from the local Hub cache.
	Hub Kind = "hub"
)

// ErrLocalPath is wrapped by the error for a reference to a file or
// folder on this machine when [Options.LocalPaths] is not set.
var ErrLocalPath = errors.New("paths on this machine are not allowed")

// HubClient fetches a model's config files from the Hub or the local Hub
// cache; [*hub.Client] implements it.
type HubClient interface {
	FetchConfig(ctx context.Context, ref hub.Ref) (*hub.Snapshot, error)
}

// Options say what a reference may resolve to. The zero value allows the
// catalog only.
type Options struct {
	// Hub fetches Hub ids, from the network or the local Hub cache as its
	// configuration says (hub.Config.Offline reads the cache only). Nil
	// means no Hub: Hub ids fail, and releases of catalog models stand in
	// for them unless Exact is set.
	Hub HubClient
	// Revision is the Hub revision (branch, tag or commit) for a
	// reference that names none; "" means main. A reference that names
	// another revision ("org/name@v2") is an error. With a revision, a
	// catalog name is read from the Hub at that revision.
	Revision string
	// LocalPaths allows references to files and folders on this machine.
	// Without it a reference spelt as a path is refused, wrapping
	// [ErrLocalPath], and names are never looked up on the disk.
	LocalPaths bool
	// Exact turns off the stand-ins (see the package documentation): a
	// model that cannot be read is an error.
	Exact bool
	// Checkpoint reads the safetensors headers of a model folder or a Hub
	// repository (the Hub by Range requests when the Hub client is a
	// [HubFiles], or its cache) into [Source.Checkpoint], and notes a
	// parameter count that differs from config.json's with both figures.
	// It costs a read of every shard's header, so it is off by default:
	// the catalog and config.json alone give an estimate offline.
	Checkpoint bool
}

// hub returns the Hub client, nil when there is none. A nil *hub.Client
// stored in the interface counts as none.
func (o Options) hub() HubClient {
	if c, ok := o.Hub.(*hub.Client); ok && c == nil {
		return nil
	}
	return o.Hub
}

// Location is what a reference names, before anything is read from it.
type Location struct {
	// Ref is the reference as given, without surrounding spaces.
	Ref string `json:"ref"`
	// Kind is where the model's config is read from.
	Kind Kind `json:"kind"`
	// Path is the file or folder on this machine (File and Folder).
	Path string `json:"path,omitempty"`
	// Hub is the repository and revision (Hub), or the catalog model's
	// Hub id (Catalog).
	Hub hub.Ref `json:"hub,omitzero"`
}

// Locate decides what ref names, reading nothing but, when
// [Options.LocalPaths] is set, whether a path exists and is a file or a
// folder. In order:
//
//   - a reference spelt as a path (see the package documentation) is a
//     File or Folder, or an error: wrapping [ErrLocalPath] when local paths
//     are not allowed, or fs.ErrNotExist when it does not exist;
//   - a catalog id or alias without a revision is Catalog;
//   - with local paths allowed, a name that exists on the disk is a File
//     or Folder;
//   - "org/name", "org/name@rev", or a catalog name with a revision, is
//     Hub;
//   - any other name is an error wrapping [model.ErrNotFound] that names
//     the closest catalog models.
//
// A malformed Hub id or revision is an error wrapping [hub.ErrInvalidRef].
func Locate(ref string, o Options) (Location, error) {
	ref = strings.TrimSpace(ref)
	loc := Location{Ref: ref}
	s := parse(ref)
	switch {
	case ref == "":
		return loc, fmt.Errorf("empty model reference: %w", model.ErrNotFound)
	case s.path && !o.LocalPaths:
		return loc, fmt.Errorf("%s: %w", ref, ErrLocalPath)
	case s.path && o.Revision != "":
		return loc, fmt.Errorf("%w: revision %q given for the path %s (revisions apply to Hub ids)", hub.ErrInvalidRef, o.Revision, ref)
	case s.path:
		return statPath(loc)
	}
	rev, err := s.revision(o.Revision)
	if err != nil {
		return loc, err
	}
	if rev == "" {
		if id, err := model.CatalogID(s.name); err == nil {
			loc.Kind, loc.Hub = Catalog, hub.Ref{Repo: id}
			return loc, nil
		}
	}
	if o.LocalPaths {
		if l, err := statPath(loc); err == nil {
			return l, nil
		}
	}
	if rev != "" {
		if id, err := model.CatalogID(s.name); err == nil {
			loc.Kind, loc.Hub = Hub, hub.Ref{Repo: id, Revision: rev}
			return loc, nil
		}
	}
	if !strings.Contains(s.name, "/") {
		_, err := model.CatalogID(s.name)
		return loc, err
	}
	r := hub.Ref{Repo: s.name, Revision: rev}
	if err := r.Validate(); err != nil {
		return loc, err
	}
	loc.Kind, loc.Hub = Hub, r
	return loc, nil
}

// statPath locates loc.Ref on this machine: a folder or a regular file.
func statPath(loc Location) (Location, error) {
	st, err := os.Stat(loc.Ref)
	switch {
	case err != nil:
		return loc, err // an *fs.PathError naming the path
	case st.IsDir():
		loc.Kind = Folder
	case st.Mode().IsRegular():
		loc.Kind = File
	default:
		return loc, fmt.Errorf("%s: not a regular file or a folder (%s)", loc.Ref, st.Mode().Type())
	}
	loc.Path = loc.Ref
	return loc, nil
}

// syntax is what a reference's spelling says, before anything is looked up.
type syntax struct {
	// path is set for a reference spelt as a path.
	path bool
	// name is the part before the first "@", rev the part after it, and
	// at whether there is an "@" (for a name).
	name, rev string
	at        bool
}

// parse reads the spelling of ref. A reference is a path when it starts
// with "/", "." or "~", holds a backslash or a drive letter ("C:"),
// ends in .json, .safetensors or .gguf, or has more than one "/" before
// any "@": none of these is a Hub id ("org/name", "org/name@refs/pr/1").
func parse(ref string) syntax {
	lower := strings.ToLower(ref)
	name, rev, at := strings.Cut(ref, "@")
	drive := len(ref) >= 2 && ref[1] == ':' && ('a' <= ref[0]|0x20 && ref[0]|0x20 <= 'z')
	path := strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, ".") || strings.HasPrefix(ref, "~") ||
		strings.Contains(ref, `\`) || drive || strings.Count(name, "/") > 1 ||
		strings.HasSuffix(lower, ".json") || strings.HasSuffix(lower, ".safetensors") || strings.HasSuffix(lower, ".gguf")
	if path {
		return syntax{path: true}
	}
	return syntax{name: name, rev: rev, at: at}
}

// revision merges the reference's revision with the options' one.
func (s syntax) revision(opt string) (string, error) {
	if s.at && s.rev == "" {
		return "", fmt.Errorf("%w: %q: empty revision after \"@\"", hub.ErrInvalidRef, s.name+"@")
	}
	if opt == "" {
		return s.rev, nil
	}
	if err := hub.ValidateRevision(opt); err != nil {
		return "", err
	}
	if s.rev != "" && s.rev != opt {
		return "", fmt.Errorf("%w: revision given twice: %q in the reference and %q", hub.ErrInvalidRef, s.rev, opt)
	}
	return opt, nil
}
