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

// Package waterline embeds the chart's default values, so that tools
// reading a user's values file (waterline sim --values) merge it over the
// chart's defaults as Helm does. The chart itself leaves *.go out
// (.helmignore).
package waterline

import _ "embed"

// Values is the chart's values.yaml.
//
//go:embed values.yaml
var Values []byte

// ValuesSchema is the chart's values.schema.json, which Helm checks a
// values file against.
//
//go:embed values.schema.json
var ValuesSchema []byte
