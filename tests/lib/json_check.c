/* json_check.c — strict JSON validator for the timeline tests. See json_check.h.
 * Public: json_validate, json_count. */
#include "lib/json_check.h"

#include <string.h>

typedef struct {
    const char *s;
    size_t i, n;
    int depth;
} P;

static void ws(P *p)
{
    while (p->i < p->n && strchr(" \t\r\n", p->s[p->i]) && p->s[p->i])
        p->i++;
}

static int lit(P *p, const char *w)
{
    size_t l = strlen(w);
    if (p->n - p->i < l || memcmp(p->s + p->i, w, l) != 0)
        return -1;
    p->i += l;
    return 0;
}

static int string(P *p)
{
    if (p->i >= p->n || p->s[p->i] != '"')
        return -1;
    for (p->i++; p->i < p->n; p->i++) {
        unsigned char c = (unsigned char)p->s[p->i];
        if (c == '"') {
            p->i++;
            return 0;
        }
        if (c < 0x20)
            return -1;
        if (c == '\\') {
            if (++p->i >= p->n)
                return -1;
            char e = p->s[p->i];
            if (e == 'u') {
                for (int k = 0; k < 4; k++)
                    if (++p->i >= p->n || !strchr("0123456789abcdefABCDEF", p->s[p->i]) ||
                        !p->s[p->i])
                        return -1;
            } else if (!strchr("\"\\/bfnrt", e) || !e) {
                return -1;
            }
        }
    }
    return -1;
}

static int digits(P *p)
{
    size_t start = p->i;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9')
        p->i++;
    return p->i > start ? 0 : -1;
}

static int number(P *p)
{
    if (p->i < p->n && p->s[p->i] == '-')
        p->i++;
    if (p->i < p->n && p->s[p->i] == '0')
        p->i++;
    else if (digits(p))
        return -1;
    if (p->i < p->n && p->s[p->i] == '.') {
        p->i++;
        if (digits(p))
            return -1;
    }
    if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
        p->i++;
        if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-'))
            p->i++;
        if (digits(p))
            return -1;
    }
    return 0;
}

static int value(P *p);

static int container(P *p, char open, char close)
{
    if (++p->depth > 64)
        return -1;
    p->i++; /* open */
    (void)open;
    ws(p);
    if (p->i < p->n && p->s[p->i] == close) {
        p->i++;
        p->depth--;
        return 0;
    }
    for (;;) {
        ws(p);
        if (close == '}') {
            if (string(p))
                return -1;
            ws(p);
            if (p->i >= p->n || p->s[p->i++] != ':')
                return -1;
            ws(p);
        }
        if (value(p))
            return -1;
        ws(p);
        if (p->i >= p->n)
            return -1;
        char c = p->s[p->i++];
        if (c == close) {
            p->depth--;
            return 0;
        }
        if (c != ',')
            return -1;
    }
}

static int value(P *p)
{
    if (p->i >= p->n)
        return -1;
    switch (p->s[p->i]) {
    case '{': return container(p, '{', '}');
    case '[': return container(p, '[', ']');
    case '"': return string(p);
    case 't': return lit(p, "true");
    case 'f': return lit(p, "false");
    case 'n': return lit(p, "null");
    default: return number(p);
    }
}

int json_validate(const char *text, size_t len, size_t *where)
{
    P p = {text, 0, len, 0};
    ws(&p);
    int rc = value(&p);
    ws(&p);
    if (rc == 0 && p.i != len)
        rc = -1;
    if (where)
        *where = p.i;
    return rc;
}

size_t json_count(const char *haystack, const char *needle)
{
    size_t c = 0, l = strlen(needle);
    for (const char *p = haystack; (p = strstr(p, needle)) != NULL; p += l)
        c++;
    return c;
}
