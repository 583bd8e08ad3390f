/*
Copyright The Waterline Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// decodeStrict decodes JSON into p, refusing unknown fields, and accepts
// durations as Go duration strings ("45m", "1h30m") as well as
// nanoseconds, so that a parameter file reads like the flags do.
func decodeStrict(data []byte, p *SyntheticParams) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	t := reflect.TypeFor[SyntheticParams]()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type != reflect.TypeFor[time.Duration]() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		v, ok := raw[name]
		if !ok || len(v) == 0 || v[0] != '"' {
			continue
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return err
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("field %s: %w", name, err)
		}
		raw[name] = json.RawMessage(fmt.Sprint(int64(d)))
	}
	fixed, err := json.Marshal(raw)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(fixed))
	dec.DisallowUnknownFields()
	return dec.Decode(p)
}
