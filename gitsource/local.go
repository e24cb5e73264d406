package gitsource

import (
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// ErrNoRepository is a directory that lies in no git repository.
var ErrNoRepository = errors.New("not in a git repository")

// LocalRef is the commit ref names in the git repository that holds dir
// (a tag, a branch, a branch of its remotes, or a commit id): "" when the
// repository has no such ref, ErrNoRepository when dir lies in none.
func LocalRef(dir, ref string) (string, error) {
	r, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return "", ErrNoRepository
	}
	if err != nil {
		return "", fmt.Errorf("open the repository of %s: %w", dir, err)
	}
	for _, name := range []string{"refs/tags/" + ref, "refs/heads/" + ref, "refs/remotes/origin/" + ref, ref} {
		h, err := r.ResolveRevision(plumbing.Revision(name))
		if err != nil {
			continue
		}
		if _, err := r.CommitObject(*h); err == nil {
			return h.String(), nil
		}
	}
	return "", nil
}
