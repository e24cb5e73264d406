package gitsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Repo is a repository fetched into memory: every branch and tag.
type Repo struct {
	URL  string
	repo *git.Repository
}

// noRedirects makes go-git's HTTP transport refuse every redirect. Trust
// is judged on the URL a source names; go-git follows a server's first
// redirect to any host by default, which would install from a repository
// trust never saw while the lock records the trusted URL.
var noRedirects = sync.OnceFunc(func() {
	c := githttp.NewClientWithOptions(nil, &githttp.ClientOptions{RedirectPolicy: githttp.NoFollowRedirects})
	client.InstallProtocol("http", c)
	client.InstallProtocol("https", c)
})

// Fetch mirrors the repository at url into dir (a bare repository there:
// objects stay packed on disk, so a large file costs its compressed size
// until someone reads it). "" keeps it in memory.
func Fetch(ctx context.Context, url, dir string) (*Repo, error) {
	noRedirects()
	var st storage.Storer = memory.NewStorage()
	if dir != "" {
		st = filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
	}
	r, err := git.CloneContext(ctx, st, nil, &git.CloneOptions{URL: url, Mirror: true, Tags: git.AllTags})
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", url, err)
	}
	return &Repo{URL: url, repo: r}, nil
}

// Resolve is the commit ref names now ("" is the default branch): a tag,
// a branch or a commit id.
func (r *Repo) Resolve(ref string) (string, error) {
	if ref == "" {
		ref = "HEAD"
	}
	for _, name := range []string{ref, "refs/tags/" + ref, "refs/heads/" + ref} {
		h, err := r.repo.ResolveRevision(plumbing.Revision(name))
		if err == nil {
			if _, err := r.repo.CommitObject(*h); err == nil {
				return h.String(), nil
			}
		}
	}
	return "", fmt.Errorf("%s has no tag, branch or commit %q", r.URL, ref)
}

// Has reports whether commit is in the repository.
func (r *Repo) Has(commit string) bool {
	_, err := r.repo.CommitObject(plumbing.NewHash(commit))
	return err == nil && plumbing.IsHash(commit)
}

// Kind is what a tree entry is.
type Kind int

const (
	KindFile Kind = iota
	KindExecutable
	KindLink
	KindDir
	// KindOther is a submodule or anything else no skill can hold.
	KindOther
)

// Entry is one entry of a tree, named by its slash path below the
// directory walked.
type Entry struct {
	Name string
	Kind Kind
	Size int64
	// Target is a link's text.
	Target string
	open   func() (io.ReadCloser, error)
}

// Open reads a file's content.
func (e Entry) Open() (io.ReadCloser, error) {
	if e.open == nil {
		return nil, errors.New("not a file")
	}
	return e.open()
}

// Walk calls fn for every entry below dir (a slash path, "" for the top)
// in commit's tree, parents before children.
func (r *Repo) Walk(commit, dir string, fn func(Entry) error) error {
	c, err := r.repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		return fmt.Errorf("%s has no commit %s", r.URL, commit)
	}
	tree, err := c.Tree()
	if err != nil {
		return err
	}
	if dir != "" {
		if tree, err = tree.Tree(dir); err != nil {
			return fmt.Errorf("%s at %s has no directory %s", r.URL, short(commit), dir)
		}
	}
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	for {
		name, entry, err := w.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		e := Entry{Name: name}
		switch entry.Mode {
		case filemode.Dir:
			e.Kind = KindDir
		case filemode.Regular, filemode.Deprecated, filemode.Executable:
			e.Kind = KindFile
			if entry.Mode == filemode.Executable {
				e.Kind = KindExecutable
			}
			blob, err := r.repo.BlobObject(entry.Hash)
			if err != nil {
				return err
			}
			e.Size, e.open = blob.Size, blob.Reader
		case filemode.Symlink:
			e.Kind = KindLink
			blob, err := r.repo.BlobObject(entry.Hash)
			if err != nil {
				return err
			}
			if blob.Size > 4096 {
				return fmt.Errorf("%s: link %s is %d bytes long", r.URL, name, blob.Size)
			}
			rd, err := blob.Reader()
			if err != nil {
				return err
			}
			b, err := io.ReadAll(rd)
			rd.Close()
			if err != nil {
				return err
			}
			e.Target = string(b)
		default:
			e.Kind = KindOther
		}
		if err := fn(e); err != nil {
			return err
		}
	}
}

// RemoteRef is what a ref names on the remote now, without fetching the
// repository: "" when the remote has no such branch or tag (a commit id
// names itself).
func RemoteRef(ctx context.Context, url, ref string) (string, error) {
	if plumbing.IsHash(ref) {
		return ref, nil
	}
	noRedirects()
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{PeelingOption: git.AppendPeeled})
	if err != nil {
		return "", fmt.Errorf("list %s: %w", url, err)
	}
	byName := map[string]string{}
	var head string
	for _, r := range refs {
		n := r.Name().String()
		switch {
		case r.Type() == plumbing.HashReference:
			byName[n] = r.Hash().String()
		case n == "HEAD":
			head = r.Target().String()
		}
	}
	if ref == "" {
		if head == "" {
			return byName["HEAD"], nil
		}
		return byName[head], nil
	}
	for _, n := range []string{"refs/tags/" + ref + "^{}", "refs/tags/" + ref, "refs/heads/" + ref, ref} {
		if h, ok := byName[n]; ok {
			return h, nil
		}
	}
	return "", nil
}

// Short is a commit id as people read it.
func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// Under reports whether name lies at or below dir (slash paths).
func Under(name, dir string) bool {
	return dir == "" || name == dir || strings.HasPrefix(name, dir+"/") || path.Clean(name) == dir
}
