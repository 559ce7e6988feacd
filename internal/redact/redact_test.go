package redact_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/governor-dev/governor/internal/redact"
)

const (
	openai    = "sk-proj-abcdefghijklmnop1234567890"
	anthropic = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz"
	github    = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	slack     = "xoxb-1234567890-abcdefghij"
	aws       = "AKIAIOSFODNN7EXAMPLE"
)

func TestArgs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		// Flags and NAME=value words.
		{"plain", []string{"python", "eval.py", "--n", "3"}, "python eval.py --n 3"},
		{"empty", nil, ""},
		{"flag value", []string{"cli", "--api-key", "abc123", "run"}, "cli --api-key *** run"},
		{"flag equals", []string{"cli", "--api-key=abc123"}, "cli --api-key=***"},
		{"flag case", []string{"cli", "--API-KEY=abc", "--Token", "t"}, "cli --API-KEY=*** --Token ***"},
		{"token", []string{"gh", "--token", "x"}, "gh --token ***"},
		{"password", []string{"db", "--password=hunter2"}, "db --password=***"},
		{"secret", []string{"x", "--secret", "s", "--client-secret=c"}, "x --secret *** --client-secret=***"},
		{"compound token", []string{"x", "--github-token", "g", "--hf_token=h"}, "x --github-token *** --hf_token=***"},
		{"camelCase flag", []string{"x", "--accessToken", "a", "--apiKey=b", "--clientSecret", "c"}, "x --accessToken *** --apiKey=*** --clientSecret ***"},
		{"camelCase acronym", []string{"x", "--APIKey=a", "-authToken", "b"}, "x --APIKey=*** -authToken ***"},
		{"single dash go flag", []string{"x", "-api-key", "k", "-token=t"}, "x -api-key *** -token=***"},
		{"java property", []string{"java", "-Ddb.password=pw", "-jar", "a.jar"}, "java -Ddb.password=*** -jar a.jar"},
		{"secret flag last", []string{"cli", "--token"}, "cli --token"},
		{"env openai", []string{"env", "OPENAI_API_KEY=abc", "run"}, "env OPENAI_API_KEY=*** run"},
		{"env key lower", []string{"key=v", "token=w"}, "key=*** token=***"},
		{"env camelCase", []string{"accessToken=v"}, "accessToken=***"},
		{"env password", []string{"DB_PASSWORD=pw", "SECRETKEY=s", "AWS_SECRET_ACCESS_KEY=k"}, "DB_PASSWORD=*** SECRETKEY=*** AWS_SECRET_ACCESS_KEY=***"},

		{"flag value NAME=value", []string{"kubectl", "create", "secret", "generic", "s", "--from-literal=password=abc", "--env=API_KEY=x", "-eTOKEN=y"}, "kubectl create secret generic s --from-literal=password=*** --env=API_KEY=*** -eTOKEN=***"},
		{"docker -e", []string{"docker", "run", "-e", "OPENAI_API_KEY=abc", "-e", "MODE=fast", "img"}, "docker run -e OPENAI_API_KEY=*** -e MODE=fast img"},
		{"helm --set", []string{"helm", "install", "--set", "auth.password=pw,replicas=2"}, "helm install --set auth.password=***"},

		// Well-known clients.
		{"mysql -pPASS", []string{"mysql", "-uroot", "-phunter2", "db"}, "mysql -uroot -p*** db"},
		{"mysqldump path -pPASS", []string{"/usr/bin/mysqldump", "-ps3cret", "db"}, "/usr/bin/mysqldump -p*** db"},
		{"mariadb -pPASS", []string{"mariadb", "-ps3cret"}, "mariadb -p***"},
		{"mysql -p prompts", []string{"mysql", "-p", "dbname"}, "mysql -p dbname"},
		{"redis-cli -a", []string{"redis-cli", "-h", "h", "-a", "hunter2", "ping"}, "redis-cli -h h -a *** ping"},
		{"redis-cli --pass", []string{"redis-cli", "--pass", "hunter2"}, "redis-cli --pass ***"},
		{"curl -u", []string{"curl", "-u", "user:pass", "https://h"}, "curl -u user:*** https://h"},
		{"curl --user=", []string{"curl", "--user=user:pass", "https://h"}, "curl --user=user:*** https://h"},
		{"curl -uUSER:PASS", []string{"curl", "-uuser:pass"}, "curl -uuser:***"},
		{"curl --proxy-user", []string{"curl", "--proxy-user", "p:q", "-U", "r:s"}, "curl --proxy-user p:*** -U r:***"},
		{"curl -u without password", []string{"curl", "-u", "user", "https://h"}, "curl -u user https://h"},
		{"sshpass", []string{"sshpass", "-p", "pw", "ssh", "h"}, "sshpass -p *** ssh h"},
		{"sshpass attached", []string{"sshpass", "-ppw", "ssh", "h"}, "sshpass -p*** ssh h"},

		// Headers.
		{"x-api-key header", []string{"curl", "-H", "X-Api-Key: abc123"}, "curl -H 'X-Api-Key: ***'"},
		{"token header", []string{"curl", "-H", "X-Auth-Token:abc", "-H", "Private-Token: def"}, "curl -H X-Auth-Token:*** -H 'Private-Token: ***'"},
		{"authorization token", []string{"curl", "-H", "Authorization: Token abc123"}, "curl -H 'Authorization: ***'"},
		{"bearer", []string{"curl", "-H", "Authorization: Bearer abc.def"}, "curl -H 'Authorization: ***'"},
		{"bearer elsewhere", []string{"x", "use Bearer abc.def"}, "x 'use Bearer ***'"},
		{"cookie", []string{"curl", "-H", "Cookie: session=a; id=b"}, "curl -H 'Cookie: ***'"},
		{"header flag equals", []string{"curl", "--header=X-Goog-Api-Key: abc"}, "curl '--header=X-Goog-Api-Key: ***'"},
		{"header not secret", []string{"curl", "-H", "Content-Type: application/json", "-H", "X-Request-Id: 42"}, "curl -H 'Content-Type: application/json' -H 'X-Request-Id: 42'"},

		// URLs.
		{"url password", []string{"redis-cli", "-u", "redis://user:pw@host:6379/0"}, "redis-cli -u redis://user:***@host:6379/0"},
		{"url without password", []string{"curl", "https://example.com/a@b"}, "curl https://example.com/a@b"},
		{"url api_key", []string{"curl", "https://h/v1?api_key=abc&q=1"}, "curl 'https://h/v1?api_key=***&q=1'"},
		{"url token and access_token", []string{"curl", "https://h/?q=x&access_token=abc#top", "https://h/?token=t"}, "curl 'https://h/?q=x&access_token=***#top' 'https://h/?token=***'"},
		{"url sentinel password", []string{"governor", "--redis-url", "redis+sentinel://h:26379?master_name=m&password=pw"}, "governor --redis-url 'redis+sentinel://h:26379?master_name=m&password=***'"},
		{"url presigned", []string{"curl", "https://b.s3.amazonaws.com/k?X-Amz-Credential=c&X-Amz-Signature=abc&X-Amz-Security-Token=t", "https://a.blob.core.windows.net/c?sv=1&sig=zzz"}, "curl 'https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Signature=***&X-Amz-Security-Token=***' 'https://a.blob.core.windows.net/c?sv=1&sig=***'"},
		{"url not secret params", []string{"curl", "https://h/?max_tokens=5&key_id=k&tokenizer=t"}, "curl 'https://h/?max_tokens=5&key_id=k&tokenizer=t'"},

		// JSON.
		{"json", []string{"curl", "-d", `{"api_key":"abc","model":"m","n":1}`}, `curl -d '{"api_key":"***","model":"m","n":1}'`},
		{"json spaced nested", []string{"x", `{"auth": {"user": "u", "password": "p w"}, "accessToken": 12345}`}, `x '{"auth": {"user": "u", "password": "***"}, "accessToken": ***}'`},
		{"json not secret", []string{"x", `{"max_tokens": 100, "key_file": "/k"}`}, `x '{"max_tokens": 100, "key_file": "/k"}'`},

		// Scripts: sh -c and other arguments of several words.
		{"sh -c env", []string{"sh", "-c", "OPENAI_API_KEY=abc python eval.py"}, "sh -c 'OPENAI_API_KEY=*** python eval.py'"},
		{"sh -c export quoted", []string{"bash", "-lc", `export DB_PASSWORD="a b"; make test`}, `bash -lc 'export DB_PASSWORD=***; make test'`},
		{"sh -c flags", []string{"sh", "-c", "cli --token t && cli --api-key=k run"}, "sh -c 'cli --token *** && cli --api-key=*** run'"},
		{"sh -c clients", []string{"sh", "-c", "mysql -pX db; redis-cli -a Y ping | curl -u u:Z h"}, "sh -c 'mysql -p*** db; redis-cli -a *** ping | curl -u u:*** h'"},
		{"sh -c header", []string{"sh", "-c", `curl -H "X-Api-Key: abc" https://h`}, `sh -c 'curl -H '\''X-Api-Key: ***'\'' https://h'`},
		{"sh -c json escaped", []string{"sh", "-c", `curl -d "{\"password\": \"pw\"}" h`}, `sh -c 'curl -d "{\"password\": \"***\"}" h'`},
		{"sh -c url", []string{"sh", "-c", "curl 'https://h/?api_key=abc' | jq ."}, `sh -c 'curl '\''https://h/?api_key=***'\'' | jq .'`},
		{"sh -c nested", []string{"sh", "-c", `bash -c "TOKEN=x make"`}, `sh -c 'bash -c '\''TOKEN=*** make'\'''`},
		{"NAME=value with spaces", []string{"ssh", "h", "API_KEY=abc ./run"}, "ssh h API_KEY=***"}, // the value may hold spaces
		{"-c not a script", []string{"tool", "-c", "API_KEY=x", "gcc", "-c", "a.c"}, "tool -c API_KEY=*** gcc -c a.c"},
		{"ssh remote command", []string{"ssh", "h", "./run --token t"}, "ssh h './run --token ***'"},
		{"sh -c plain", []string{"sh", "-c", "make -j4 && ./bench --max-tokens 5"}, "sh -c 'make -j4 && ./bench --max-tokens 5'"},

		// Provider keys anywhere.
		{"provider keys bare", []string{openai, anthropic, github, slack, aws}, "*** *** *** *** ***"},
		{"provider key inside", []string{"--header=x-api: " + anthropic}, "'--header=x-api: ***'"},
		{"provider key in value", []string{"cfg=" + openai}, "cfg=***"},
		{"provider key in script", []string{"sh", "-c", "run " + github}, "sh -c 'run ***'"},

		// Ordinary arguments stay as they are.
		{"not secret: max tokens", []string{"llm", "--max-tokens", "4000", "--tokenizer=gpt2", "--maxTokens", "9"}, "llm --max-tokens 4000 --tokenizer=gpt2 --maxTokens 9"},
		{"not secret: key file", []string{"ssh", "--key-file", "/k", "--password-file=/run/pw", "--token-env", "GH_TOKEN"}, "ssh --key-file /k --password-file=/run/pw --token-env GH_TOKEN"},
		{"not secret: key id and name", []string{"aws", "--key-id", "k1", "--secret-name", "prod/db"}, "aws --key-id k1 --secret-name prod/db"},
		{"not secret: negated", []string{"x", "--no-auth", "--port", "80"}, "x --no-auth --port 80"},
		{"not secret: env", []string{"MAX_TOKENS=100", "KEYBOARD=us", "PATH=/bin", "TOKEN_FILE=/t"}, "MAX_TOKENS=100 KEYBOARD=us PATH=/bin TOKEN_FILE=/t"},
		{"short flag kept", []string{"psql", "-p", "5432", "-U", "me"}, "psql -p 5432 -U me"},
		{"-p of others kept", []string{"docker", "run", "-p8080:80", "ssh", "-p2222", "-a"}, "docker run -p8080:80 ssh -p2222 -a"},
		{"short sk kept", []string{"pip", "install", "sk-learn", "task-abcdefghijklmnopqrstuv"}, "pip install sk-learn task-abcdefghijklmnopqrstuv"},
		{"quoting", []string{"sh", "-c", "echo 'hi' there", ""}, `sh -c 'echo '\''hi'\'' there' ''`},
		{"commit message", []string{"git", "commit", "-m", "rotate keys; see notes"}, "git commit -m 'rotate keys; see notes'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := redact.Args(tt.args); got != tt.want {
				t.Errorf("Args(%q)\n got %s\nwant %s", tt.args, got, tt.want)
			}
		})
	}
}

// Issue 24.17: the shapes the previous rules missed.
func TestArgsMore(t *testing.T) {
	jwt := "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	tg := "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
	for _, tt := range []struct{ name, in, want string }{
		{"--pat", "gh-tool --pat abc123def", "gh-tool --pat ***"},
		{"--pat=", "gh-tool --pat=abc123def --path /x", "gh-tool --pat=*** --path /x"},
		{"GH_PAT=", "GH_PAT=abc123 make", "GH_PAT=*** make"},
		{"token as URL user", "git clone https://" + github + "@github.com/o/r.git", "git clone https://***@github.com/o/r.git"},
		{"plain token as URL user", "git push https://abcdefghij0123456789xyz@example.com/r", "git push https://***@example.com/r"},
		{"docker login -p", "docker login -u me -p hunter2 registry.example.com", "docker login -u me -p *** registry.example.com"},
		{"docker login -pX", "docker login -u me -phunter2 r.example.com", "docker login -u me -p*** r.example.com"},
		{"docker run -p is a port", "docker run -p 8080:80 img", "docker run -p 8080:80 img"},
		{"JWT", "curl -d token=x " + jwt, "curl -d token=*** ***"},
		{"JWT alone", "client " + jwt, "client ***"},
		{"stripe", "pay sk_live_4eC39HqLyjWDarjtT1zdp7dc", "pay ***"},
		{"stripe test", "pay --k rk_test_4eC39HqLyjWDarjtT1zdp7dc", "pay --k ***"},
		{"telegram URL", "curl https://api.telegram.org/bot" + tg + "/sendMessage", "curl https://api.telegram.org/bot***/sendMessage"},
		{"telegram token", "notify " + tg, "notify ***"},
	} {
		if got := redact.Args(strings.Fields(tt.in)); got != tt.want {
			t.Errorf("%s: Args(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"redis://h:6379/0", "redis://h:6379/0"},
		{"redis://user:pw@h:6379/0", "redis://user:***@h:6379/0"},
		{"redis://:pw@h", "redis://:***@h"},
		{"redis://user@h", "redis://user@h"},
		{"rediss://u:p%40ss@h/1?client_name=a@b", "rediss://u:***@h/1?client_name=a@b"},
		{"unix://u:pw@/run/redis.sock", "unix://u:***@/run/redis.sock"},
		{"redis://u:p/w@h", "redis://u:***@h"},     // malformed: '/' in the password
		{"redis://u:p@w@h:x", "redis://u:***@h:x"}, // malformed: '@' in the password
		{"u:pw@h:6379", "u:***@h:6379"},            // no scheme
		{"redis+sentinel://h:26379?master_name=m&password=pw", "redis+sentinel://h:26379?master_name=m&password=***"},
		{"redis+sentinel://h:26379/0?password=pw&master_name=m", "redis+sentinel://h:26379/0?password=***&master_name=m"},
		{"redis+sentinel://:pw@h?master_name=m&password=pw2&addr=h2:1", "redis+sentinel://:***@h?master_name=m&password=***&addr=h2:1"},
		{"redis://h?pass%77ord=pw", "redis://h?pass%77ord=***"}, // an escaped name
		{"redis://h?dial_timeout=3s&client_name=x", "redis://h?dial_timeout=3s&client_name=x"},
		{"", ""},
		// Issue 24.17: a token as the user, a password inside ?addr=.
		{"https://" + github + "@github.com/o/r.git", "https://***@github.com/o/r.git"},
		{"https://x0123456789abcdefghijk@git.example.com/r", "https://***@git.example.com/r"},
		{"ssh://git@github.com/o/r", "ssh://git@github.com/o/r"},
		{"redis+cluster://h:1?addr=u:PW@x:2", "redis+cluster://h:1?addr=u:***@x:2"},
		{"redis+cluster://h:1?addr=u:PW@", "redis+cluster://h:1?addr=u:***@"},
		{"redis+sentinel://h?master_name=m&addr=h2:1&addr=u:PW@h3:2", "redis+sentinel://h?master_name=m&addr=h2:1&addr=u:***@h3:2"},
	}
	for _, tt := range tests {
		if got := redact.URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func ExampleArgs() {
	fmt.Println(redact.Args([]string{
		"env", "OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx",
		"python", "eval.py", "--token", "t0ps3cret", "--max-tokens=512",
	}))
	fmt.Println(redact.Args([]string{"sh", "-c", "curl -u me:pw https://h/?api_key=k"}))
	// Output:
	// env OPENAI_API_KEY=*** python eval.py --token *** --max-tokens=512
	// sh -c 'curl -u me:*** https://h/?api_key=***'
}

// Args never panics, and a secret value given by a flag never shows,
// whatever surrounds it.
func FuzzArgs(f *testing.F) {
	f.Add("sh", "-c", `a "b \" c' d\`)
	f.Add("curl", "-u", "u:p")
	f.Add("x", "--token", `{"password": "p"}`)
	f.Add("mysql", "-pX", "'unclosed")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		_ = redact.Args([]string{a, b, c})
		_ = redact.Text(a + " " + b + " " + c)
		_ = redact.URL(a)
		const secret = "SeCrEtVaLuE42"
		if got := redact.Args([]string{a, "--api-key", secret, b}); strings.Contains(got, secret) {
			t.Fatalf("Args shows the secret: %s", got)
		}
	})
}

// Args runs once per `governor run`; this is what it costs.
func BenchmarkArgs(b *testing.B) {
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"plain", []string{"python", "eval.py", "--n", "3", "--model", "m"}},
		{"script", []string{"sh", "-c", `OPENAI_API_KEY=abc curl -H "X-Api-Key: k" 'https://h/?api_key=x' && make -j8 test | tee log`}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				_ = redact.Args(bc.args)
			}
		})
	}
}

// TestSharedFixture: the cases every client's redaction is checked
// against (the clients ask the bridge, which runs Args).
func TestSharedFixture(t *testing.T) {
	data, err := os.ReadFile("../../governor/testdata/redaction.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Cases []struct {
			Args  []string `json:"args"`
			Shown string   `json:"shown"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range fx.Cases {
		if got := redact.Args(c.Args); got != c.Shown {
			t.Errorf("Args(%q) = %q, want %q", c.Args, got, c.Shown)
		}
	}
}
