// A statement's shape (statement_shape.hpp): a copy of the analyzed
// statement with every value made one placeholder of its type's family,
// every cast and relabeling between a family's types taken off, and every
// B-tree operator replaced by its family's member for the family's widest
// types, hashed by PostgreSQL's query jumble.
#include "admission/statement_shape.hpp"

extern "C" {
#include "access/stratnum.h"
#include "catalog/pg_cast.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
}

#include "compat.hpp"

namespace pgmemo {

namespace {

// The type standing for its family: a value of any of them compares the
// same way with the others.
Oid family_type(Oid type) {
    switch (type) {
        case INT2OID:
        case INT4OID:
        case INT8OID: return INT8OID;
        case INT2ARRAYOID:
        case INT4ARRAYOID:
        case INT8ARRAYOID: return INT8ARRAYOID;
        case VARCHAROID:
        case UNKNOWNOID:
        case TEXTOID: return TEXTOID;
        case VARCHARARRAYOID:
        case TEXTARRAYOID: return TEXTARRAYOID;
        default: return type;
    }
}

// A value's place: the same node for a literal and a parameter.
Node *value_place(Oid type, int location) {
    Param *p = makeNode(Param);
    p->paramkind = PARAM_EXTERN;
    p->paramid = 0;
    p->paramtype = family_type(type);
    p->paramtypmod = -1;
    p->paramcollid = InvalidOid;
    p->location = location;
    return reinterpret_cast<Node *>(p);
}

bool is_value_place(Node *node) {
    return node && IsA(node, Param) && reinterpret_cast<Param *>(node)->paramkind == PARAM_EXTERN &&
           reinterpret_cast<Param *>(node)->paramid == 0;
}

// The operator of opno's B-tree family that compares the family types of
// its inputs with the same strategy; opno when there is none.
Oid family_operator(Oid opno) {
    CompatBtreeInterpretation i;
    if (!compat_btree_interpretation(opno, &i)) return opno;
    Oid left = family_type(i.lefttype), right = family_type(i.righttype);
    if (left == i.lefttype && right == i.righttype) return opno;
    if (i.strategy == kCompatNotEqualStrategy) {  // <>: the negator of the family's =
        Oid equality = get_opfamily_member(i.opfamily, left, right, BTEqualStrategyNumber);
        Oid negator = OidIsValid(equality) ? get_negator(equality) : InvalidOid;
        return OidIsValid(negator) ? negator : opno;
    }
    Oid member = get_opfamily_member(i.opfamily, left, right, int16(i.strategy));
    return OidIsValid(member) ? member : opno;
}

// Whether funcid is the cast function from source to target (pg_cast),
// however it was written: 7::int8 and int8(7) are one statement to the
// query identifier, which does not hash how a call was written.
bool is_cast_function(Oid funcid, Oid source, Oid target) {
    HeapTuple tuple = SearchSysCache2(CASTSOURCETARGET, ObjectIdGetDatum(source), ObjectIdGetDatum(target));
    if (!HeapTupleIsValid(tuple)) return false;
    bool is_cast = reinterpret_cast<Form_pg_cast>(GETSTRUCT(tuple))->castfunc == funcid;
    ReleaseSysCache(tuple);
    return is_cast;
}

// A cast of a value between types of one family (int8(int4), a text
// literal cast to varchar), given the original call and its normalized
// copy: the value's place alone.
Node *without_family_cast(const FuncExpr *original, FuncExpr *cast) {
    if (list_length(cast->args) < 1) return nullptr;
    Node *arg = static_cast<Node *>(linitial(cast->args));
    if (!is_value_place(arg)) return nullptr;
    Oid type = reinterpret_cast<Param *>(arg)->paramtype;
    if (family_type(cast->funcresulttype) != type) return nullptr;
    Oid source = exprType(static_cast<Node *>(linitial(original->args)));
    return is_cast_function(cast->funcid, source, cast->funcresulttype) ? arg : nullptr;
}

Node *normalize(Node *node, void *context) {
    if (!node) return nullptr;
    if (IsA(node, Query))
        return reinterpret_cast<Node *>(
            query_tree_mutator(reinterpret_cast<Query *>(node), as_tree_mutator(normalize), context, 0));
    if (IsA(node, RelabelType))
        return normalize(reinterpret_cast<Node *>(reinterpret_cast<RelabelType *>(node)->arg), context);
    if (IsA(node, Const)) {
        auto *c = reinterpret_cast<Const *>(node);
        return value_place(c->consttype, c->location);
    }
    if (IsA(node, Param) && reinterpret_cast<Param *>(node)->paramkind == PARAM_EXTERN) {
        auto *p = reinterpret_cast<Param *>(node);
        return value_place(p->paramtype, p->location);
    }
    Node *copy = expression_tree_mutator(node, as_tree_mutator(normalize), context);
    if (IsA(copy, FuncExpr)) {
        Node *value = without_family_cast(reinterpret_cast<FuncExpr *>(node), reinterpret_cast<FuncExpr *>(copy));
        if (value) return value;
    } else if (IsA(copy, OpExpr)) {
        reinterpret_cast<OpExpr *>(copy)->opno = family_operator(reinterpret_cast<OpExpr *>(copy)->opno);
    } else if (IsA(copy, ScalarArrayOpExpr)) {
        reinterpret_cast<ScalarArrayOpExpr *>(copy)->opno =
            family_operator(reinterpret_cast<ScalarArrayOpExpr *>(copy)->opno);
    } else if (IsA(copy, ArrayExpr)) {
        auto *a = reinterpret_cast<ArrayExpr *>(copy);
        a->element_typeid = family_type(a->element_typeid);
        a->array_typeid = family_type(a->array_typeid);
    }
    return copy;
}

}  // namespace

uint64 statement_shape(Query *query, const char *text) {
    // The mutators copy what they change: query stays as it is.
    auto *normalized = reinterpret_cast<Query *>(normalize(reinterpret_cast<Node *>(query), nullptr));
    normalized->queryId = UINT64CONST(0);
    return compat_query_id(normalized, text);
}

}  // namespace pgmemo
