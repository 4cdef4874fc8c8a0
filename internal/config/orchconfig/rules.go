package orchconfig

import (
	"fmt"

	"github.com/google/cel-go/cel"
)

// ProfileRuleEnv is the CEL environment of profile rules: one variable, workload, a map with
// metadata (name, namespace, labels, annotations) and spec (the Workload spec as JSON).
func ProfileRuleEnv() (*cel.Env, error) {
	return cel.NewEnv(cel.OptionalTypes(), cel.Variable("workload", cel.MapType(cel.StringType, cel.DynType)))
}

// CompileProfileRule compiles a rule's expression and checks that it yields a bool.
func CompileProfileRule(env *cel.Env, expr string) (cel.Program, error) {
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("does not compile: %w", iss.Err())
	}
	if ast.OutputType() != cel.BoolType && ast.OutputType() != cel.DynType {
		return nil, fmt.Errorf("must evaluate to a bool, not %s", ast.OutputType())
	}
	prg, err := env.Program(ast, cel.CostLimit(100000))
	if err != nil {
		return nil, fmt.Errorf("cannot be planned: %w", err)
	}
	return prg, nil
}

// HealthEnv is the CEL environment of health rules: one variable, self, the object as a map.
func HealthEnv() (*cel.Env, error) {
	return cel.NewEnv(cel.OptionalTypes(), cel.Variable("self", cel.MapType(cel.StringType, cel.DynType)))
}

// CompileHealthExpr compiles a health rule's expression and checks it yields want (a bool
// for healthy and failed, a string for message).
func CompileHealthExpr(env *cel.Env, expr string, want *cel.Type) (cel.Program, error) {
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("does not compile: %w", iss.Err())
	}
	if ast.OutputType() != want && ast.OutputType() != cel.DynType {
		return nil, fmt.Errorf("must evaluate to a %s, not %s", want, ast.OutputType())
	}
	prg, err := env.Program(ast, cel.CostLimit(100000))
	if err != nil {
		return nil, fmt.Errorf("cannot be planned: %w", err)
	}
	return prg, nil
}

// CompileRolloutGate compiles a rollout's gate: a bool over objects, the applied objects of a
// Workload's plan with their health, and workload, its name, namespace and labels.
func CompileRolloutGate(expr string) (cel.Program, error) {
	env, err := cel.NewEnv(cel.OptionalTypes(),
		cel.Variable("objects", cel.ListType(cel.MapType(cel.StringType, cel.DynType))),
		cel.Variable("workload", cel.MapType(cel.StringType, cel.DynType)))
	if err != nil {
		return nil, err
	}
	return CompileProfileRule(env, expr)
}
