package tableimport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// A JSON document decoded without interpretation, so that rewriting a few
// string values and encoding it again keeps everything else: key order,
// duplicate keys, unknown fields and number spellings (json.Number keeps the
// digits; int64 snapshot ids never pass through float64).
//
// Values are *jsonObject, []any, string, json.Number, bool or nil.
type jsonObject struct {
	members []jsonMember
}

type jsonMember struct {
	key   string
	value any
}

// get returns the value of the first member named key.
func (o *jsonObject) get(key string) (any, bool) {
	for _, m := range o.members {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

// set replaces the value of every member named key (there is normally one).
func (o *jsonObject) set(key string, v any) {
	for i := range o.members {
		if o.members[i].key == key {
			o.members[i].value = v
		}
	}
}

func (o *jsonObject) getString(key string) (string, bool) {
	v, ok := o.get(key)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

func (o *jsonObject) getObject(key string) (*jsonObject, bool) {
	v, ok := o.get(key)
	if !ok {
		return nil, false
	}
	obj, ok := v.(*jsonObject)
	return obj, ok
}

func (o *jsonObject) getArray(key string) ([]any, bool) {
	v, ok := o.get(key)
	if !ok {
		return nil, false
	}
	a, ok := v.([]any)
	return a, ok
}

// parseJSON decodes one JSON value (trailing whitespace allowed).
func parseJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeJSONValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

func decodeJSONValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := &jsonObject{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key is %v", kt)
				}
				v, err := decodeJSONValue(dec)
				if err != nil {
					return nil, err
				}
				obj.members = append(obj.members, jsonMember{key: key, value: v})
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return obj, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeJSONValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return arr, nil
		default:
			return nil, fmt.Errorf("unexpected %v", t)
		}
	default:
		return t, nil
	}
}

// encodeJSON writes v compactly; strings are escaped as encoding/json does,
// without HTML escaping.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeJSONValue(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeJSONValue(buf *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case *jsonObject:
		buf.WriteByte('{')
		for i, m := range t.members {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSONString(buf, m.key); err != nil {
				return err
			}
			buf.WriteByte(':')
			if err := writeJSONValue(buf, m.value); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeJSONValue(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case string:
		return writeJSONString(buf, t)
	case json.Number:
		buf.WriteString(t.String())
	case bool:
		if t {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case nil:
		buf.WriteString("null")
	default:
		return fmt.Errorf("unexpected JSON value %T", v)
	}
	return nil
}

func writeJSONString(buf *bytes.Buffer, s string) error {
	var tmp bytes.Buffer
	enc := json.NewEncoder(&tmp)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	buf.Write(bytes.TrimSuffix(tmp.Bytes(), []byte("\n")))
	return nil
}
