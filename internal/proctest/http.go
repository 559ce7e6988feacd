package proctest

import (
	"io"
	"net/http"
	"testing"
)

// Fetch GETs url and returns the response, its body read and closed; a
// request or a read that fails ends the test.
func Fetch(t testing.TB, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// Get is Fetch's status code and body.
func Get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, b := Fetch(t, url)
	return resp.StatusCode, string(b)
}
