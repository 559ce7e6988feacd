package release

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// target is one OS/arch of the release, by each channel's name for it.
type target struct {
	goos, goarch, wheelPlat, npmCPU string
}

var targets = []target{
	{"linux", "amd64", "manylinux2014_x86_64", "x64"},
	{"linux", "arm64", "manylinux2014_aarch64", "arm64"},
	{"darwin", "amd64", "macosx_12_0_x86_64", "x64"},
	{"darwin", "arm64", "macosx_12_0_arm64", "arm64"},
}

// releaseDir is the release command's output (GOVERNOR_RELEASE_DIR, set by
// release/release.sh, which runs these tests on what it built).
func releaseDir(t *testing.T) (dir, version string) {
	dir = os.Getenv("GOVERNOR_RELEASE_DIR")
	if dir == "" {
		t.Skip("GOVERNOR_RELEASE_DIR unset: release/release.sh --dry-run runs these tests on its output")
	}
	return dir, strings.TrimSpace(read(t, "VERSION"))
}

// files reads the members of a .tar.gz (npm tarballs, archives, the sdist)
// or a .whl, by name.
func files(t *testing.T, path string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	if strings.HasSuffix(path, ".whl") {
		z, err := zip.OpenReader(path)
		if err != nil {
			t.Fatal(err)
		}
		defer z.Close()
		for _, f := range z.File {
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(r)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
			out[f.Name] = b
		}
		return out
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			out[h.Name] = b
		}
	}
}

// checkBinary: b is a static executable for tg (ELF without an
// interpreter, or Mach-O of the CPU).
func checkBinary(t *testing.T, what string, b []byte, tg target) {
	t.Helper()
	switch tg.goos {
	case "linux":
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: not an ELF file: %v", what, err)
		}
		want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[tg.goarch]
		if f.Machine != want || f.Type != elf.ET_EXEC {
			t.Errorf("%s: ELF %v %v, want an executable for %v", what, f.Type, f.Machine, want)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s: dynamically linked (PT_INTERP): want a static binary (CGO_ENABLED=0)", what)
			}
		}
	case "darwin":
		f, err := macho.NewFile(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: not a Mach-O file: %v", what, err)
		}
		want := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[tg.goarch]
		if f.Cpu != want || f.Type != macho.TypeExec {
			t.Errorf("%s: Mach-O %v %v, want an executable for %v", what, f.Type, f.Cpu, want)
		}
		// The wheel's tag may not promise an older macOS than the binary
		// runs on (LC_BUILD_VERSION's minos).
		major, minor, ok := minOS(f)
		tagMajor, tagMinor := 0, 0
		if _, err := fmt.Sscanf(tg.wheelPlat, "macosx_%d_%d_", &tagMajor, &tagMinor); err != nil || !ok ||
			tagMajor < major || tagMajor == major && tagMinor < minor {
			t.Errorf("%s: the binary needs macOS %d.%d (LC_BUILD_VERSION found: %t); the wheel tag %s says otherwise", what, major, minor, ok, tg.wheelPlat)
		}
	}
}

// Every artifact of the release names VERSION and Apache-2.0, carries
// LICENSE and is in SHA256SUMS. The archive of an OS/arch holds the full
// binary; its wheel and npm platform package, which run their binary only
// as `governor bridge` (no console script, no npm "bin"), hold one
// binary, the same build without serve.
func TestArtifacts(t *testing.T) {
	dir, v := releaseDir(t)
	license := read(t, "LICENSE")

	// SHA256SUMS covers every other file, with the right sums.
	sums := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(mustRead(t, filepath.Join(dir, "SHA256SUMS")))))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q: want SUM  NAME", sc.Text())
		}
		sums[name] = sum
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "SHA256SUMS" {
			continue
		}
		h := sha256.Sum256(mustRead(t, filepath.Join(dir, e.Name())))
		if got := hex.EncodeToString(h[:]); sums[e.Name()] != got {
			t.Errorf("SHA256SUMS: %s has %q, the file %s", e.Name(), sums[e.Name()], got)
		}
		delete(sums, e.Name())
	}
	for name := range sums {
		t.Errorf("SHA256SUMS names %s, which is not in the release", name)
	}

	var notices string
	for _, e := range entries {
		checkReproducible(t, filepath.Join(dir, e.Name()))
	}
	for _, tg := range targets {
		name := "governor-" + v + "-" + tg.goos + "-" + tg.goarch
		arc := files(t, filepath.Join(dir, name+".tar.gz"))
		bin := arc[name+"/governor"]
		notices = string(arc[name+"/THIRD_PARTY_NOTICES"])
		// The archive: the binary, LICENSE and the notices of the modules it
		// links, README.md, and the files `serve --help` and `config schema
		// --help` say ship: the Grafana dashboard and the config's schema.
		if bin == nil || string(arc[name+"/LICENSE"]) != license || arc[name+"/README.md"] == nil ||
			string(arc[name+"/metrics/dashboard.json"]) != read(t, "metrics/dashboard.json") ||
			string(arc[name+"/config/exec-defaults.schema.json"]) != read(t, "config/exec-defaults.schema.json") ||
			len(arc) != 6 {
			t.Errorf("%s.tar.gz: want %s/ with governor, LICENSE, THIRD_PARTY_NOTICES, README.md, metrics/dashboard.json "+
				"and config/exec-defaults.schema.json as in the tree, have %d files", name, name, len(arc))
		}
		checkNotices(t, name+".tar.gz", notices, bin)
		checkBinary(t, name+".tar.gz", bin, tg)
		if tg.goos == runtime.GOOS && tg.goarch == runtime.GOARCH {
			exe := filepath.Join(t.TempDir(), "governor")
			if err := os.WriteFile(exe, bin, 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(exe, "--version").Output()
			if err != nil || !regexp.MustCompile(`^governor `+regexp.QuoteMeta(v)+`, commit [0-9a-f]{40}(-dirty)?, go1\.[^,]*, `+spdx+`\n$`).Match(out) {
				t.Errorf("%s: governor --version = %q, %v; want the version and the commit", name, out, err)
			}
		}

		whl := "governor_client-" + v + "-py3-none-" + tg.wheelPlat + ".whl"
		w := files(t, filepath.Join(dir, whl))
		meta := string(w["governor_client-"+v+".dist-info/METADATA"])
		if !strings.Contains(meta, "\nVersion: "+v+"\n") || !strings.Contains(meta, "\nLicense: "+spdx+"\n") {
			t.Errorf("%s: METADATA does not name Version %s and License %s:\n%s", whl, v, spdx, meta)
		}
		if string(w["governor_client-"+v+".dist-info/LICENSE"]) != license {
			t.Errorf("%s: no LICENSE in its .dist-info", whl)
		}
		if !strings.Contains(string(w["governor/_version.py"]), `__version__ = '`+v+`'`) {
			t.Errorf("%s: governor/_version.py does not say %s", whl, v)
		}
		wheelBin := w["governor/_bin/governor"]
		checkBinary(t, whl, wheelBin, tg)
		checkNotices(t, whl, string(w["governor_client-"+v+".dist-info/THIRD_PARTY_NOTICES"]), wheelBin)
		if ep := w["governor_client-"+v+".dist-info/entry_points.txt"]; ep != nil {
			t.Errorf("%s: entry_points.txt %q: want none (its binary is the bridge's, not a command)", whl, ep)
		}

		tgz := "governor-cli-" + tg.goos + "-" + tg.npmCPU + "-" + v + ".tgz"
		p := files(t, filepath.Join(dir, tgz))
		var pkg struct {
			Name, Version, License string
			OS, CPU                []string
			Bin                    any
		}
		if err := json.Unmarshal(p["package/package.json"], &pkg); err != nil {
			t.Fatalf("%s: package.json: %v", tgz, err)
		}
		if pkg.Name != "@governor/cli-"+tg.goos+"-"+tg.npmCPU || pkg.Version != v || pkg.License != spdx ||
			len(pkg.OS) != 1 || pkg.OS[0] != tg.goos || len(pkg.CPU) != 1 || pkg.CPU[0] != tg.npmCPU {
			t.Errorf("%s: package.json %+v; want version %s, licence %s, os %s, cpu %s", tgz, pkg, v, spdx, tg.goos, tg.npmCPU)
		}
		if string(p["package/LICENSE"]) != license {
			t.Errorf("%s: no LICENSE", tgz)
		}
		if pkg.Bin != nil {
			t.Errorf("%s: package.json \"bin\" %v: want none (its binary is the bridge's, not a command)", tgz, pkg.Bin)
		}
		checkBinary(t, tgz, p["package/bin/governor"], tg)
		checkNotices(t, tgz, string(p["package/THIRD_PARTY_NOTICES"]), p["package/bin/governor"])
		checkClientBinaries(t, tg, bin, wheelBin, p["package/bin/governor"])
	}

	client := files(t, filepath.Join(dir, "governor-client-"+v+".tgz"))
	var pkg struct {
		Version, License     string
		OptionalDependencies map[string]string
		Bin                  any
	}
	if err := json.Unmarshal(client["package/package.json"], &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Version != v || pkg.License != spdx || len(pkg.OptionalDependencies) != len(targets) || string(client["package/LICENSE"]) != license {
		t.Errorf("governor-client-%s.tgz: package.json %+v, LICENSE %t; want version %s, licence %s, the %d platform packages",
			v, pkg, client["package/LICENSE"] != nil, v, spdx, len(targets))
	}
	if pkg.Bin != nil {
		t.Errorf("governor-client-%s.tgz: package.json \"bin\" %v: want none", v, pkg.Bin)
	}
	for name, dv := range pkg.OptionalDependencies {
		if dv != v {
			t.Errorf("governor-client-%s.tgz: optional dependency %s@%s, want %s", v, name, dv, v)
		}
	}

	// The sdist (named as PEP 625 has it) builds a binary: the notices of
	// the modules it links travel with it.
	sdist := files(t, filepath.Join(dir, "governor_client-"+v+".tar.gz"))
	top := "governor_client-" + v + "/"
	info := string(sdist[top+"PKG-INFO"])
	if !strings.Contains(info, "\nVersion: "+v+"\n") || !strings.Contains(info, "\nLicense: "+spdx+"\n") ||
		string(sdist[top+"LICENSE"]) != license || strings.TrimSpace(string(sdist[top+"go-src/VERSION"])) != v ||
		sdist[top+"go-src/go.mod"] == nil || sdist[top+"go-src/cmd/governor/main.go"] == nil ||
		string(sdist[top+"THIRD_PARTY_NOTICES"]) != notices {
		t.Errorf("governor_client-%s.tar.gz: want PKG-INFO of %s under %s, LICENSE, THIRD_PARTY_NOTICES and the Go source (go-src/)", v, v, spdx)
	}

	checkFormula(t, string(mustRead(t, filepath.Join(dir, "governor.rb"))), v, dir)
}

// minOS is the macOS a Mach-O binary needs: LC_BUILD_VERSION's minos
// (X.Y.Z in nibbles xxxx.yy.zz).
func minOS(f *macho.File) (major, minor int, ok bool) {
	const lcBuildVersion = 0x32
	for _, l := range f.Loads {
		raw := l.Raw()
		if len(raw) >= 16 && f.ByteOrder.Uint32(raw) == lcBuildVersion {
			v := f.ByteOrder.Uint32(raw[12:])
			return int(v >> 16), int(v >> 8 & 0xff), true
		}
	}
	return 0, 0, false
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
