"""Generic operators: arithmetic and logic slips with no scientific reading (the inverse operator, swapped
operands, a constant nudged, a condition inverted). Registered after the scientific ones: lower priority."""
from __future__ import annotations

import ast
from collections.abc import Iterator

from .registry import mutation_operator
from .edits import Mutation, binop_operands, enclosed, make_mutation, needs_brackets, span, swap, token_between
from .scope import in_index, is_number, is_sequence_literal, parent_links, protected_literal, visible_nodes


_OPERATOR_SWAPS = {ast.Add: "-", ast.Sub: "+", ast.Mult: "/", ast.Div: "*", ast.Pow: "*"}


_OPERATOR_TOKENS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


@mutation_operator("binary_operator", "Use the inverse arithmetic operator.", scientific=False)
def _find_binary_operator(tree: ast.Module, source: str) -> Iterator[Mutation]:
    for node, parent, field in visible_nodes(tree):
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATOR_SWAPS:
            if is_sequence_literal(node.left) or is_sequence_literal(node.right):
                continue
            parts = binop_operands(source, node, node.left, node.right)
            if parts is None or source[parts[1][0]:parts[1][1]] != _OPERATOR_TOKENS[type(node.op)]:
                continue
            op_start, op_end = parts[1]
            new = _OPERATOR_SWAPS[type(node.op)]
            if not isinstance(node.op, ast.Pow):
                yield make_mutation("binary_operator", source, op_start, op_end, new)
                continue
            # x ** 2 -> x * 2 lowers precedence; keep the product grouped where it sits
            start, end = span(source, node)
            text = source[start:op_start] + new + source[op_end:end]
            if needs_brackets(11, parent, field) and not enclosed(source, start, end):
                text = f"({text})"
            yield make_mutation("binary_operator", source, start, end, text)
        elif isinstance(node, ast.AugAssign) and type(node.op) in _OPERATOR_SWAPS \
                and not is_sequence_literal(node.value):
            token = token_between(source, span(source, node.target)[1], span(source, node.value)[0])
            if token and source[token[0]:token[1]] == _OPERATOR_TOKENS[type(node.op)] + "=":
                yield make_mutation("binary_operator", source, *token, _OPERATOR_SWAPS[type(node.op)] + "=")


@mutation_operator("swap_operands", "Exchange the two sides of an order-sensitive operation.", scientific=False)
def _find_swap_operands(tree: ast.Module, source: str) -> Iterator[Mutation]:
    for node, _, _ in visible_nodes(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Sub, ast.Div, ast.Pow)):
            mutation = swap("swap_operands", source, node)
            if mutation:
                yield mutation


@mutation_operator("constant", "Change a numeric constant slightly.", scientific=False)
def _find_constant(tree: ast.Module, source: str) -> Iterator[Mutation]:
    parents = parent_links(tree)
    for node, _, _ in visible_nodes(tree):
        if not is_number(node) or in_index(node, parents) or protected_literal(node, parents):
            continue
        if type(node.value) is int and node.value not in (0, 1):
            new = str(node.value + 1)  # the magnitude: -3 becomes -4
        elif type(node.value) is float and node.value != 0:
            new = repr(node.value * 2)
        else:
            continue
        yield make_mutation("constant", source, *span(source, node), new)


@mutation_operator("negate_condition", "Invert a branch, loop or filter condition.", scientific=False)
def _find_negate_condition(tree: ast.Module, source: str) -> Iterator[Mutation]:
    for node, parent, field in visible_nodes(tree):
        is_test = (isinstance(parent, (ast.If, ast.While, ast.IfExp)) and field == "test") \
            or (isinstance(parent, ast.comprehension) and field == "ifs")
        if not is_test or isinstance(node, ast.Constant):  # `while True` is a loop form, not a condition
            continue
        start, end = span(source, node)
        text = source[start:end]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and text.startswith("not"):
            yield make_mutation("negate_condition", source, start, end, text[3:].lstrip(" \t"))
        else:
            yield make_mutation("negate_condition", source, start, end, f"not ({text})")
