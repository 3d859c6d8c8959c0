/* params.c — the parameter object: a kernel's tuned values parsed once into
 * a {name, value} list that gives both the compiler's -D string and the
 * values the driver sizes its launches with. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tuning/tuning.h"

static const fmmcl_tuning_param *space_param(const fmmcl_tuning_space *space, const char *name, size_t nlen) {
  if (!space) return NULL;
  const size_t np = fmmcl_tuning_space_nparams(space);
  for (size_t i = 0; i < np; i++)
    if (strlen(space->params[i].name) == nlen && strncmp(space->params[i].name, name, nlen) == 0)
      return &space->params[i];
  return NULL;
}

static fmmcl_param *find(const fmmcl_params *p, const char *name) {
  for (size_t i = 0; i < p->n; i++)
    if (strcmp(p->p[i].name, name) == 0) return (fmmcl_param *)&p->p[i];
  return NULL;
}

int fmmcl_params_parse(const fmmcl_tuning_space *space, const char *text, fmmcl_params *out, char *why,
                       size_t len) {
  memset(out, 0, sizeof *out);
  for (const char *s = text ? text : ""; *s;) {
    while (*s == ' ' || *s == '\t') s++;
    if (!*s) break;
    size_t tlen = strcspn(s, " \t");
    const char *tok = s;
    s += tlen;
    if (tlen > 2 && tok[0] == '-' && tok[1] == 'D') tok += 2, tlen -= 2;
    const char *eq = memchr(tok, '=', tlen);
    char num[32], *end;
    const size_t nlen = eq ? (size_t)(eq - tok) : 0;
    if (eq) snprintf(num, sizeof num, "%.*s", (int)(tlen - nlen - 1), eq + 1);
    const long v = eq ? strtol(num, &end, 10) : 0;
    if (!eq || !nlen || nlen >= sizeof out->p[0].name || end == num || *end) {
      snprintf(why, len, "\"%.*s\" is not NAME=integer", (int)tlen, tok);
      return 0;
    }
    const fmmcl_tuning_param *sp = space_param(space, tok, nlen);
    if (sp && (sp->flags & FMMCL_TUNE_AUTO) && v == 0) continue; /* the driver's to size */
    char name[32];
    snprintf(name, sizeof name, "%.*s", (int)nlen, tok);
    fmmcl_param *have = find(out, name);
    if (!have && out->n == FMMCL_PARAMS_MAX) {
      snprintf(why, len, "more than %d parameters", FMMCL_PARAMS_MAX);
      return 0;
    }
    if (!have) have = &out->p[out->n++];
    snprintf(have->name, sizeof have->name, "%s", name);
    have->value = (int)v;
    have->host = sp && (sp->flags & FMMCL_TUNE_HOST);
  }
  return 1;
}

int fmmcl_params_has(const fmmcl_params *p, const char *name) { return find(p, name) != NULL; }

int fmmcl_params_get(const fmmcl_params *p, const char *name, int fallback) {
  const fmmcl_param *q = find(p, name);
  return q ? q->value : fallback;
}

void fmmcl_params_set(fmmcl_params *p, const char *name, int value) {
  fmmcl_param *q = find(p, name);
  if (!q && p->n < FMMCL_PARAMS_MAX) {
    q = &p->p[p->n++];
    snprintf(q->name, sizeof q->name, "%s", name);
    q->host = 0;
  }
  if (q) q->value = value;
}

static void format(const fmmcl_params *p, int compiler, char *buf, size_t len) {
  size_t used = 0;
  if (len) buf[0] = '\0';
  for (size_t i = 0; i < p->n && used < len; i++) {
    if (compiler && p->p[i].host) continue;
    const int n = snprintf(buf + used, len - used, "%s%s%s=%d", used ? " " : "", compiler ? "-D" : "",
                           p->p[i].name, p->p[i].value);
    if (n < 0) break;
    used += (size_t)n;
  }
}

void fmmcl_params_defines(const fmmcl_params *p, char *buf, size_t len) { format(p, 1, buf, len); }

void fmmcl_params_format(const fmmcl_params *p, char *buf, size_t len) { format(p, 0, buf, len); }
