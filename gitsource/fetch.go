package gitsource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Repo is what one fetch brought: the commit a ref names and the tree
// it holds, read from the bare repository the fetch wrote.
type Repo struct {
	URL string
	// Commit is the commit the ref asked for names (for FetchCommit,
	// the commit asked for).
	Commit string
	repo   *git.Repository
	lim    Limits
}

// noRedirects makes go-git's HTTP transport (RemoteRef's) refuse every
// redirect. Trust is judged on the URL a source names; go-git follows a
// server's first redirect to any host by default, which would ask a
// host trust never saw.
var noRedirects = sync.OnceFunc(func() {
	c := githttp.NewClientWithOptions(nil, &githttp.ClientOptions{RedirectPolicy: githttp.NoFollowRedirects})
	client.InstallProtocol("http", c)
	client.InstallProtocol("https", c)
})

// Fetch fetches the one commit ref names ("" is the remote's default
// branch; a branch, a tag, a commit id, or a prefix of the commit a
// branch or tag names) into dir, a new bare repository: that commit
// alone (depth 1), no other branch or tag, no blob over lim.Blob, with
// the git processes held to lim. A ref the remote does not have is a
// *RefError; a bound reached is a *LimitError.
func Fetch(ctx context.Context, url, ref, dir string, lim Limits) (*Repo, error) {
	f, err := newFetcher(ctx, url, dir, lim)
	if err != nil {
		return nil, err
	}
	want, err := f.want(ref)
	if err != nil {
		return nil, err
	}
	if err := f.fetch(want, true); err != nil {
		if plumbing.IsHash(want) && notThere(err) {
			return nil, &RefError{URL: url, Ref: ref}
		}
		return nil, err
	}
	return f.open()
}

// FetchCommit fetches commit, which a lock pinned when ref named it, into
// dir: that commit alone where the server hands out commits by id (git's
// protocol v2 does, for any commit a ref reaches), else ref's history,
// bounded as Fetch is, in which the commit may or may not be (Has says).
func FetchCommit(ctx context.Context, url, ref, commit, dir string, lim Limits) (*Repo, error) {
	if !plumbing.IsHash(commit) {
		return nil, fmt.Errorf("%q is not a commit id", commit)
	}
	f, err := newFetcher(ctx, url, dir, lim)
	if err != nil {
		return nil, err
	}
	err = f.fetch(commit, true)
	var le *LimitError
	if err != nil && !errors.As(err, &le) && ctx.Err() == nil {
		// A server that answers only wants of advertised refs (protocol
		// v0 without uploadpack.allowReachableSHA1InWant): the ref's
		// history, in a fresh repository so nothing of the failed
		// attempt counts against the bound.
		if f, err = newFetcher(ctx, url, dir, lim); err != nil {
			return nil, err
		}
		var want string
		if want, err = f.want(ref); err == nil {
			err = f.fetch(want, false)
		}
	}
	if err != nil {
		return nil, err
	}
	r, err := f.open()
	if err != nil {
		return nil, err
	}
	if r.Has(commit) {
		r.Commit = commit
	}
	return r, nil
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
			blob, err := r.blob(commit, dir, name, entry.Hash)
			if err != nil {
				return err
			}
			e.Size, e.open = blob.Size, blob.Reader
		case filemode.Symlink:
			e.Kind = KindLink
			blob, err := r.blob(commit, dir, name, entry.Hash)
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

// blob is the blob h at name (below dir) of commit's tree, or a
// *BlobError when it is over the blob limit: left on the server by the
// fetch's filter, or sent anyway by a server that ignores filters.
func (r *Repo) blob(commit, dir, name string, h plumbing.Hash) (*object.Blob, error) {
	at := path.Join(dir, name)
	blob, err := r.repo.BlobObject(h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return nil, &BlobError{URL: r.URL, Commit: commit, Path: at, Size: -1, Limit: r.lim.Blob}
	}
	if err != nil {
		return nil, err
	}
	if blob.Size > r.lim.Blob {
		return nil, &BlobError{URL: r.URL, Commit: commit, Path: at, Size: blob.Size, Limit: r.lim.Blob}
	}
	return blob, nil
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
