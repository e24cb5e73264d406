package skills

import (
	"errors"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Stat fingerprints: what tells an unchanged file without reading it, for
// discovery, the digest pass (Resource.Stat, a resume's Previous) and the
// snapshot cache.

// statNums is a stat fingerprint as numbers (statKey is its written
// form): device, inode, size, modification and change time in ns.
type statNums struct {
	dev, ino           uint64
	size, mtime, ctime int64
}

func statNumsOf(st *unix.Stat_t) statNums {
	return statNums{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// String is the fingerprint's written form (Resource.Stat).
func (s statNums) String() string { return string(s.appendTo(make([]byte, 0, statNumsMax))) }

// statNumsMax bounds the written form: five 20-digit numbers (a sign
// included) and four colons.
const statNumsMax = 5*20 + 4

func (s statNums) appendTo(b []byte) []byte {
	// strconv, not fmt: a warm scan makes one per file.
	b = strconv.AppendUint(b, s.dev, 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, s.ino, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, s.size, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, s.mtime, 10)
	b = append(b, ':')
	return strconv.AppendInt(b, s.ctime, 10)
}

// parseStat reads the written form back.
func parseStat(s string) (statNums, bool) {
	var f [5]string
	for i := range 4 {
		var ok bool
		f[i], s, ok = strings.Cut(s, ":")
		if !ok {
			return statNums{}, false
		}
	}
	f[4] = s
	dev, e1 := strconv.ParseUint(f[0], 10, 64)
	ino, e2 := strconv.ParseUint(f[1], 10, 64)
	size, e3 := strconv.ParseInt(f[2], 10, 64)
	m, e4 := strconv.ParseInt(f[3], 10, 64)
	c, e5 := strconv.ParseInt(f[4], 10, 64)
	if err := errors.Join(e1, e2, e3, e4, e5); err != nil {
		return statNums{}, false
	}
	return statNums{dev: dev, ino: ino, size: size, mtime: m, ctime: c}, true
}

func (s statNums) olderThan(stamp int64) bool { return s.mtime < stamp && s.ctime < stamp }

// statKey is the fingerprint a file must keep for its digest to be
// reused: device, inode, size, modification and change time (ns).
func statKey(st *unix.Stat_t) string { return statNumsOf(st).String() }
