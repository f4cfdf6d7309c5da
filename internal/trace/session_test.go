package trace

import (
	"encoding/json"
	"testing"
)

func TestSessionAndUser(t *testing.T) {
	for _, c := range []struct {
		meta          string
		session, user string
	}{
		{``, "", ""},
		{`[1]`, "", ""},
		{`{"session_id":"a","session":"b","sessionId":"c","user_id":"u","user":"v","userId":"w"}`, "a", "u"},
		{`{"session":"b","sessionId":"c","user":"v","userId":"w"}`, "b", "v"},
		{`{"sessionId":"c","userId":"w"}`, "c", "w"},
		// null, blank and objects give way to the next key; numbers count.
		{`{"session_id":null,"session":" ","sessionId":"c","user_id":{"id":1},"user":42}`, "c", "42"},
		{`{"session_id":true,"user_id":1.50}`, "", "1.50"},
		// Nested keys do not count.
		{`{"info":{"session_id":"x","user_id":"y"}}`, "", ""},
		// As a decoded map: a repeated key's last value, escaped keys;
		// nothing from a value that is not JSON.
		{`{"session_id":"a","session_id":"b","user":"u","user":null}`, "b", ""},
		{`{"session\u005fid":"e","us\u0065r":"f"}`, "e", "f"},
		{`{"session_id":"a"`, "", ""},
		{`{"session_id":"a"} {}`, "", ""},
		{`{"session_id":"a","x":[1,}`, "", ""},
	} {
		s, u := SessionAndUser(json.RawMessage(c.meta))
		if s != c.session || u != c.user {
			t.Errorf("SessionAndUser(%s) = %q, %q; want %q, %q", c.meta, s, u, c.session, c.user)
		}
	}
}
