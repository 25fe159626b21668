// The text of the SELECT a top-level statement planned (statement_text.hpp).
#include "registered/statement_text.hpp"
#include "admission/statement_shape.hpp"

extern "C" {
#include "nodes/parsenodes.h"
#include "rewrite/rewriteHandler.h"
}

#include "compat.hpp"

#include <cctype>
#include <cstring>

namespace pgmemo {
namespace {

// A few tokens of SQL, enough to step over the words and parentheses of a
// prefix: white space and comments are skipped, quoted identifiers and
// string literals are one token each.
struct Tokens {
    const char *p;

    void skip_space() {
        for (;;) {
            while (*p && isspace(static_cast<unsigned char>(*p))) p++;
            if (p[0] == '-' && p[1] == '-') {
                while (*p && *p != '\n') p++;
            } else if (p[0] == '/' && p[1] == '*') {
                int depth = 0;
                do {
                    if (p[0] == '/' && p[1] == '*') depth++, p += 2;
                    else if (p[0] == '*' && p[1] == '/') depth--, p += 2;
                    else if (*p) p++;
                    else return;
                } while (depth > 0);
            } else {
                return;
            }
        }
    }

    // Whether the next token is this word (any case); consumed if it is.
    bool word(const char *w) {
        skip_space();
        size_t n = strlen(w);
        if (strncasecmp(p, w, n) != 0) return false;
        unsigned char next = static_cast<unsigned char>(p[n]);
        if (isalnum(next) || next == '_' || next == '$' || next >= 0x80) return false;
        p += n;
        return true;
    }

    // Steps over one token; false at the end of the text.
    bool skip_token() {
        skip_space();
        if (!*p) return false;
        if (*p == '"' || *p == '\'') {
            char quote = *p++;
            while (*p && !(*p == quote && p[1] != quote)) p += (*p == quote) ? 2 : 1;
            if (*p) p++;
        } else if (isalnum(static_cast<unsigned char>(*p)) || *p == '_' || static_cast<unsigned char>(*p) >= 0x80) {
            while (isalnum(static_cast<unsigned char>(*p)) || *p == '_' || *p == '$' ||
                   static_cast<unsigned char>(*p) >= 0x80)
                p++;
        } else {
            p++;
        }
        return true;
    }

    // Steps over a parenthesized list if one comes next.
    bool skip_parenthesized() {
        skip_space();
        if (*p != '(') return true;
        int depth = 0;
        do {
            skip_space();
            if (*p == '(') depth++;
            else if (*p == ')') depth--;
            if (!skip_token()) return false;
        } while (depth > 0);
        return true;
    }
};

// EXPLAIN [ ( option, ... ) ] [ ANALYZE ] [ VERBOSE ] statement
const char *after_explain(Tokens t) {
    if (!t.skip_parenthesized()) return nullptr;
    t.word("analyze") || t.word("analyse");
    t.word("verbose");
    return t.p;
}

// DECLARE name [ options ] CURSOR [ WITH | WITHOUT HOLD ] FOR query
const char *after_declare(Tokens t) {
    if (!t.skip_token()) return nullptr;  // the name
    while (!t.word("for"))
        if (!t.skip_token()) return nullptr;
    return t.p;
}

// PREPARE name [ ( type, ... ) ] AS statement
const char *after_prepare(Tokens t) {
    if (!t.skip_token() || !t.skip_parenthesized() || !t.word("as")) return nullptr;
    return t.p;
}

}  // namespace

char *statement_source(const char *source, const Query *query, bool *after_prefix) {
    size_t length = strlen(source);
    size_t start = query->stmt_location > 0 ? size_t(query->stmt_location) : 0;
    if (start > length) start = length;
    size_t len = query->stmt_len > 0 ? size_t(query->stmt_len) : length - start;
    if (len > length - start) len = length - start;
    char *slice = pnstrdup(source + start, len);
    *after_prefix = false;
    Tokens t{slice};
    const char *rest = nullptr;
    if (t.word("explain")) rest = after_explain(t);
    else if (t.word("declare")) rest = after_declare(t);
    else if (t.word("prepare")) rest = after_prepare(t);
    else return slice;
    *after_prefix = true;
    if (!rest) return nullptr;
    // From the SELECT's first token, as a top-level statement's slice
    // starts: a cursor then shares the entries of the same statement sent
    // on its own.
    Tokens select{rest};
    select.skip_space();
    return pstrdup(select.p);
}

uint64 planned_query_id(Query *analyzed, const char *text) {
    if (IsQueryIdEnabled()) return compat_query_id(analyzed, text);
    List *rewritten = QueryRewrite(static_cast<Query *>(copyObjectImpl(analyzed)));
    if (list_length(rewritten) != 1) return compat_query_id(analyzed, text);
    return compat_query_id(linitial_node(Query, rewritten), text);
}

uint64 planned_shape(Query *analyzed, const char *text) {
    List *rewritten = QueryRewrite(static_cast<Query *>(copyObjectImpl(analyzed)));
    return statement_shape(list_length(rewritten) == 1 ? linitial_node(Query, rewritten) : analyzed, text);
}

}  // namespace pgmemo
