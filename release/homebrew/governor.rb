# Homebrew formula for governor. The release command (release/release.sh)
# writes it into its output with the release's version and the sha256 of
# its archives (the @...@ fields below); published in a tap, it installs with
#   brew install governor-dev/tap/governor
class Governor < Formula
  desc "Rate and concurrency governor for AI agents, LLM evals and heavy jobs"
  homepage "https://github.com/governor-dev/governor"
  version "@VERSION@"
  license "Apache-2.0"

  depends_on macos: :monterey # the oldest macOS Go 1.26's binaries run on

  on_macos do
    on_arm do
      url "https://github.com/governor-dev/governor/releases/download/v@VERSION@/governor-@VERSION@-darwin-arm64.tar.gz"
      sha256 "@SHA256_DARWIN_ARM64@"
    end
    on_intel do
      url "https://github.com/governor-dev/governor/releases/download/v@VERSION@/governor-@VERSION@-darwin-amd64.tar.gz"
      sha256 "@SHA256_DARWIN_AMD64@"
    end
  end

  on_linux do
    on_arm do
      url "https://github.com/governor-dev/governor/releases/download/v@VERSION@/governor-@VERSION@-linux-arm64.tar.gz"
      sha256 "@SHA256_LINUX_ARM64@"
    end
    on_intel do
      url "https://github.com/governor-dev/governor/releases/download/v@VERSION@/governor-@VERSION@-linux-amd64.tar.gz"
      sha256 "@SHA256_LINUX_AMD64@"
    end
  end

  def install
    bin.install "governor"
    # LICENSE and README.md go to the prefix by Homebrew's own rule; the notices
    # of the Go modules in the binary beside them, the dashboard and schema to share.
    prefix.install "THIRD_PARTY_NOTICES"
    pkgshare.install "metrics/dashboard.json", "config/exec-defaults.schema.json"
  end

  test do
    assert_match(/^governor #{Regexp.escape(version.to_s)}, .*, Apache-2.0$/, shell_output("#{bin}/governor --version"))
    # A run in the machine's heavy slot, on the file backend in the sandbox.
    ENV["GOVERNOR_DIR"] = (testpath/"state").to_s
    output = shell_output("#{bin}/governor run --resource heavy --limit 1 -- echo held")
    assert_equal "held\n", output
  end
end
