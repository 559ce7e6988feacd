package supervise_test

import (
	"fmt"
	"testing"

	"github.com/governor-dev/governor/governor/supervise"
)

func TestRedact(t *testing.T) {
	const (
		openai    = "sk-proj-abcdefghijklmnop1234567890"
		anthropic = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"
		github    = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
		slack     = "xoxb-1234567890-abcdefghij"
		aws       = "AKIAIOSFODNN7EXAMPLE"
	)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"plain", []string{"python", "eval.py", "--n", "3"}, "python eval.py --n 3"},
		{"empty", nil, ""},
		{"flag value", []string{"cli", "--api-key", "abc123", "run"}, "cli --api-key *** run"},
		{"flag equals", []string{"cli", "--api-key=abc123"}, "cli --api-key=***"},
		{"flag case", []string{"cli", "--API-KEY=abc", "--Token", "t"}, "cli --API-KEY=*** --Token ***"},
		{"token", []string{"gh", "--token", "x"}, "gh --token ***"},
		{"password", []string{"db", "--password=hunter2"}, "db --password=***"},
		{"secret", []string{"x", "--secret", "s", "--client-secret=c"}, "x --secret *** --client-secret=***"},
		{"compound token", []string{"x", "--github-token", "g", "--hf_token=h"}, "x --github-token *** --hf_token=***"},
		{"single dash go flag", []string{"x", "-api-key", "k", "-token=t"}, "x -api-key *** -token=***"},
		{"java property", []string{"java", "-Ddb.password=pw", "-jar", "a.jar"}, "java -Ddb.password=*** -jar a.jar"},
		{"not secret: max tokens", []string{"llm", "--max-tokens", "4000", "--tokenizer=gpt2"}, "llm --max-tokens 4000 --tokenizer=gpt2"},
		{"not secret: key file", []string{"ssh", "--key-file", "/k"}, "ssh --key-file /k"},
		{"short flag kept", []string{"mysql", "-p", "secretvalue"}, "mysql -p secretvalue"},
		{"secret flag last", []string{"cli", "--token"}, "cli --token"},
		{"env openai", []string{"env", "OPENAI_API_KEY=abc", "run"}, "env OPENAI_API_KEY=*** run"},
		{"env key lower", []string{"key=v", "token=w"}, "key=*** token=***"},
		{"env password", []string{"DB_PASSWORD=pw", "SECRETKEY=s", "AWS_SECRET_ACCESS_KEY=k"}, "DB_PASSWORD=*** SECRETKEY=*** AWS_SECRET_ACCESS_KEY=***"},
		{"env not secret", []string{"MAX_TOKENS=100", "KEYBOARD=us", "PATH=/bin"}, "MAX_TOKENS=100 KEYBOARD=us PATH=/bin"},
		{"provider keys bare", []string{openai, anthropic, github, slack, aws}, "*** *** *** *** ***"},
		{"provider key inside", []string{"--header=x-api: " + anthropic}, "'--header=x-api: ***'"},
		{"provider key in value", []string{"cfg=" + openai}, "cfg=***"},
		{"short sk kept", []string{"pip", "install", "sk-learn", "task-abcdefghijklmnopqrstuv"}, "pip install sk-learn task-abcdefghijklmnopqrstuv"},
		{"bearer", []string{"curl", "-H", "Authorization: Bearer abc.def"}, "curl -H 'Authorization: Bearer ***'"},
		{"url password", []string{"redis-cli", "-u", "redis://user:pw@host:6379/0"}, "redis-cli -u redis://user:***@host:6379/0"},
		{"url without password", []string{"curl", "https://example.com/a@b"}, "curl https://example.com/a@b"},
		{"quoting", []string{"sh", "-c", "echo 'hi' there", ""}, `sh -c 'echo '\''hi'\'' there' ''`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := supervise.Redact(tt.args); got != tt.want {
				t.Errorf("Redact(%q)\n got %s\nwant %s", tt.args, got, tt.want)
			}
		})
	}
}

func ExampleRedact() {
	fmt.Println(supervise.Redact([]string{
		"env", "OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx",
		"python", "eval.py", "--token", "t0ps3cret", "--max-tokens=512",
	}))
	// Output: env OPENAI_API_KEY=*** python eval.py --token *** --max-tokens=512
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		e    supervise.Exit
		want int
	}{
		{supervise.Exit{Code: 0}, 0},
		{supervise.Exit{Code: 3}, 3},
		{supervise.Exit{Signal: 9}, 137},
		{supervise.Exit{Signal: 15}, 143},
	}
	for _, tt := range tests {
		if got := supervise.ExitCode(tt.e); got != tt.want {
			t.Errorf("ExitCode(%+v) = %d, want %d", tt.e, got, tt.want)
		}
	}
}
