package api

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"
)

// The API refuses, in one place, every string it would store or look up
// that holds a NUL or bytes that are not UTF-8: PostgreSQL's TEXT
// refuses both (the request failed with 500), where SQLite stored them.
// handle checks the path's wildcards, the query and the Idempotency-Key
// header (checkRequestText), decode every string of the JSON body
// (checkFields; encoding/json turns bytes not UTF-8 into U+FFFD, but
// keeps \u0000).

// checkText returns a 400 naming field if s holds a NUL or is not UTF-8.
func checkText(field, s string) error {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return nil
	}
	return badRequest("%s: want valid UTF-8 without NUL", field)
}

// wildcards are the names of pattern's path wildcards ("{id}": "id").
func wildcards(pattern string) []string {
	var names []string
	for _, seg := range strings.Split(pattern, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			names = append(names, strings.TrimSuffix(strings.TrimSuffix(name, "}"), "..."))
		}
	}
	return names
}

// checkRequestText checks r's path wildcards (names), query parameters
// and Idempotency-Key header.
func checkRequestText(r *http.Request, names []string) error {
	for _, name := range names {
		if err := checkText(name, r.PathValue(name)); err != nil {
			return err
		}
	}
	for name, vs := range r.URL.Query() {
		if err := checkText("query parameter", name); err != nil {
			return err
		}
		for _, v := range vs {
			if err := checkText(name, v); err != nil {
				return err
			}
		}
	}
	return checkText("Idempotency-Key", r.Header.Get("Idempotency-Key"))
}

// checkFields checks every string in v, a decoded request body, naming
// it by its JSON path ("event_types[1]"). Byte slices (json.RawMessage)
// are left to their handlers.
func checkFields(v any) error { return checkValue("", reflect.ValueOf(v)) }

func checkValue(field string, v reflect.Value) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return checkValue(field, v.Elem())
	case reflect.String:
		return checkText(field, v.String())
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil
		}
		for i := range v.Len() {
			if err := checkValue(fmt.Sprintf("%s[%d]", field, i), v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			k := fmt.Sprint(it.Key())
			if err := checkValue(field, it.Key()); err != nil {
				return err
			}
			if err := checkValue(field+"."+k, it.Value()); err != nil {
				return err
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if field != "" {
				name = field + "." + name
			}
			if err := checkValue(name, v.Field(i)); err != nil {
				return err
			}
		}
	}
	return nil
}
