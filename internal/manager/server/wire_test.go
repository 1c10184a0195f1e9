package server

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/slipway-dev/slipway/internal/manager/api"
	"github.com/slipway-dev/slipway/internal/manager/health"
	"github.com/slipway-dev/slipway/internal/manager/store"
)

// TestHealthOut_LosesNothing: a health result with every field set is the same JSON in the API's
// types as in the checker's (healthOut), for the whole answer and for one cluster's.
func TestHealthOut_LosesNothing(t *testing.T) {
	var check health.ClusterHealth
	fill(reflect.ValueOf(&check).Elem())
	for _, v := range []any{health.OperatorHealth{OperatorName: "op", OverallHealth: health.Degraded, Clusters: []health.ClusterHealth{check}},
		health.ClusterOperatorHealth{OperatorName: "op", ClusterHealth: check}} {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out any
		if _, ok := v.(health.OperatorHealth); ok {
			out, err = healthOut[api.OperatorHealth](v)
		} else {
			out, err = healthOut[api.ClusterOperatorHealth](v)
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%T in the API's types:\n got %s\nwant %s", v, got, want)
		}
	}
	// A field the API's types lack is an error, not dropped.
	if _, err := healthOut[api.OperatorHealth](map[string]any{"operatorName": "op", "newField": 1}); err == nil {
		t.Fatal("a field the API's types lack was dropped without an error")
	}
}

// fill sets every exported field of v to a value that is not its zero value (slices and maps
// hold one element), so that JSON written from it has every key.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int64:
		if v.Type() == reflect.TypeFor[time.Duration]() {
			v.SetInt(int64(time.Second))
		} else {
			v.SetInt(2)
		}
	case reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	}
}

// TestWireEnums_MatchStore: the API's deployment statuses and environments are the store's.
func TestWireEnums_MatchStore(t *testing.T) {
	var statuses, envs []string
	for _, s := range store.DeploymentStatuses {
		statuses = append(statuses, string(s))
	}
	for _, e := range store.Environments {
		envs = append(envs, string(e))
	}
	if !slices.Equal(statuses, api.DeploymentStatuses) || !slices.Equal(envs, api.Environments) {
		t.Fatalf("api: %v %v; store: %v %v", api.DeploymentStatuses, api.Environments, statuses, envs)
	}
}
