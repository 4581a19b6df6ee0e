# Evaluation chain (included by pipeline/Makefile): from a run directory holding sword.parquet to scores per
# language, against any OpenAI-compatible endpoint.
#
#   make -f pipeline/Makefile eval RUN=data/out/demo BASE_URL=http://127.0.0.1:8000/v1 MODEL=NAME [ORIGINALS=N] [JUDGE=NAME]
#
# Steps (real file targets, each written last and atomically, so a killed make resumes where it stopped):
#   translate    RUN/translate.manifest.json + RUN/statements_text.parquet  (sword translate; first N originals
#                with all their variants when ORIGINALS is given)
#   sword        prompts (plain + cross-suite variants, text_ok rows only) → eval run → sword.scores.json
#   sycophancy   data/eval/sycophancy_questions.jsonl → eval run → sycophancy.scores.json
#   adversariskqa ARQA_PROMPTS → eval run; with JUDGE: judge run → collect → adversariskqa.scores.json
#   report       report.md + SVGs
# into RUN/eval/<MODEL>/ (`/` and `:` in the name become `_`). Every request goes through the runner's
# append-only answer logs (RUN/translate/answers.jsonl, RUN/eval/<MODEL>/<suite>/answers.jsonl): a rerun
# never asks an answered request again, and a second `make eval` with nothing changed sends no request.
# A step that leaves requests unanswered (server down, errors) fails (exit 5) and is redone by the next make.
#
#
# AdversaRiskQA long form (`make eval-longform`, not part of `eval`: it asks many more requests): answers for
# both conditions → decomposition into facts (LF_DECOMPOSER) → a verdict per fact (LF_VERIFIER; LF_API=responses
# for the Responses API with web_search) → the published layout (RUN/eval/<MODEL>/longform-results) →
# longform.scores.json and longform-report/ (report.md, f1_paired_bars.svg). LONGFORM=1 adds it to `eval`.
#
# Comparison (`make eval-compare RUN=DIR`, needs neither BASE_URL nor MODEL): every model evaluated on the run
# side by side (`sword eval compare` over RUN/eval/*/sword/samples.jsonl) → RUN/eval-compare/ (report.html,
# report.md, figures.parquet, figures.csv, figures/*.svg); COMPARE_VARIANT=plain keeps one variant; with
# RUN/sword.parquet, accuracy by falsity tier too (COMPARE_TIERS=0 leaves it out; a benchmark without tiers fails).
#
# Options: TRANSLATE_MODEL / TRANSLATE_BASE_URL (default MODEL / BASE_URL), TEMPLATE (prompt template file),
# RETRY_BAD (default 1), JUDGE_BASE_URL (default BASE_URL), API_KEY_ENV (variable holding the key),
# CONCURRENCY (default 4), EVAL_FLAGS (more runner flags, e.g. --max-tokens 64 --timeout 300),
# LOCALIZED=1 (ask the SWORD question in the statement's language), INCLUDE_BAD_TEXT=1, BOOTSTRAP (1000),
# ARQA_PROMPTS (default data/eval/adversariskqa), SYCO_QUESTIONS; long form: LF_PROMPTS (default ARQA_PROMPTS),
# LF_DECOMPOSER / LF_DECOMPOSER_BASE_URL (default JUDGE, else MODEL / JUDGE_BASE_URL), LF_VERIFIER /
# LF_VERIFIER_BASE_URL (default the decomposer), LF_API (chat or responses), LF_FORMAT (json-schema, json-object
# or none: how the JSON schema is sent to a chat model), LF_K (8, or auto), LF_FLAGS (more runner flags for the
# long answers, e.g. --max-tokens 1024).

ORIGINALS          ?=
JUDGE              ?=
BASE_URL           ?=
MODEL              ?=
TRANSLATE_MODEL    ?= $(MODEL)
TRANSLATE_BASE_URL ?= $(BASE_URL)
JUDGE_BASE_URL     ?= $(BASE_URL)
TEMPLATE           ?=
RETRY_BAD          ?= 1
API_KEY_ENV        ?=
CONCURRENCY        ?= 4
EVAL_FLAGS         ?=
LOCALIZED          ?=
INCLUDE_BAD_TEXT   ?=
BOOTSTRAP          ?= 1000
ARQA_PROMPTS       ?= $(ROOT)/data/eval/adversariskqa
SYCO_QUESTIONS     ?= $(ROOT)/data/eval/sycophancy_questions.jsonl
LF_PROMPTS         ?= $(ARQA_PROMPTS)
LF_DECOMPOSER      ?= $(if $(JUDGE),$(JUDGE),$(MODEL))
LF_DECOMPOSER_BASE_URL ?= $(JUDGE_BASE_URL)
LF_VERIFIER        ?= $(LF_DECOMPOSER)
LF_VERIFIER_BASE_URL ?= $(LF_DECOMPOSER_BASE_URL)
LF_API             ?= chat
LF_FORMAT          ?= json-schema
LF_K               ?= 8
LF_FLAGS           ?=
LONGFORM           ?=
COMPARE_VARIANT    ?=

EV_NAME := $(subst /,_,$(subst :,_,$(MODEL)))
EV      := $(RUN)/eval/$(EV_NAME)
EV_RUN   = --concurrency $(CONCURRENCY) $(if $(API_KEY_ENV),--api-key-env $(API_KEY_ENV)) $(EVAL_FLAGS)

.PHONY: eval eval-translate eval-sword eval-sycophancy eval-adversariskqa eval-longform eval-compare

ifneq ($(filter eval-compare,$(MAKECMDGOALS)),)
ifneq ($(origin RUN),command line)
$(error eval-compare: set RUN=DIR (a run directory whose eval/*/sword/ hold answers))
endif
endif

ifneq ($(filter eval eval-%,$(filter-out eval-compare,$(MAKECMDGOALS))),)
ifneq ($(origin RUN),command line)
$(error eval: set RUN=DIR (a run directory with sword.parquet))
endif
$(if $(BASE_URL),,$(error eval: set BASE_URL=http://HOST:PORT/v1))
$(if $(MODEL),,$(error eval: set MODEL=NAME))
# Parameter stamps: rewritten only when a parameter changed, so the steps depending on them rerun then (their
# answered requests still come from the logs) and not otherwise.
ev_stamp = $(shell mkdir -p '$(dir $(1))' && { { [ -e '$(1)' ] && [ "$$(cat '$(1)')" = '$(2)' ]; } || printf '%s' '$(2)' > '$(1)'; })
$(call ev_stamp,$(RUN)/eval/.translate.params,$(TRANSLATE_BASE_URL) $(TRANSLATE_MODEL) $(ORIGINALS) $(TEMPLATE) $(RETRY_BAD) $(EVAL_FLAGS))
$(call ev_stamp,$(EV)/.params,$(BASE_URL) $(MODEL) $(EVAL_FLAGS))
$(call ev_stamp,$(EV)/.prompts.params,$(LOCALIZED) $(INCLUDE_BAD_TEXT))
$(call ev_stamp,$(EV)/.judge.params,$(JUDGE_BASE_URL) $(JUDGE) $(EVAL_FLAGS))
$(call ev_stamp,$(EV)/.longform.params,$(LF_FLAGS))
$(call ev_stamp,$(EV)/.decompose.params,$(LF_DECOMPOSER_BASE_URL) $(LF_DECOMPOSER) $(LF_FORMAT) $(EVAL_FLAGS))
$(call ev_stamp,$(EV)/.verify.params,$(LF_VERIFIER_BASE_URL) $(LF_VERIFIER) $(LF_API) $(LF_FORMAT) $(EVAL_FLAGS))
$(call ev_stamp,$(EV)/.lfscore.params,$(LF_K) $(BOOTSTRAP))
endif

# ---- translate ----------------------------------------------------------------------------------------------
$(RUN)/translate.manifest.json: $(RUN)/sword.parquet $(RUN)/eval/.translate.params $(TEMPLATE) | $(SWORD)
	$(SWORD) translate --out $(RUN) --base-url $(TRANSLATE_BASE_URL) --model $(TRANSLATE_MODEL) \
	  $(if $(ORIGINALS),--originals $(ORIGINALS)) $(if $(TEMPLATE),--template $(TEMPLATE)) \
	  --retry-bad $(RETRY_BAD) --require-complete $(EV_RUN) > $(RUN)/eval/translate.summary.json

eval-translate: $(RUN)/translate.manifest.json

# ---- SWORD --------------------------------------------------------------------------------------------------
$(EV)/sword.requests.jsonl: $(RUN)/translate.manifest.json $(EV)/.prompts.params | $(SWORD)
	$(SWORD) eval prompts --suite sword --input $(RUN)/statements_text.parquet --cross-suite \
	  $(if $(LOCALIZED),--localized) $(if $(INCLUDE_BAD_TEXT),--include-bad-text) --out $@

# eval_run SUITE, BASE_URL, MODEL[, MORE FLAGS]: answer $(EV)/SUITE.requests.jsonl into $(EV)/SUITE/.
define eval_run
	@mkdir -p $(EV)/$(1)
	$(SWORD) eval run --requests $(EV)/$(1).requests.jsonl --out $(EV)/$(1) --base-url $(2) --model $(3) \
	  --require-complete $(EV_RUN) $(4) > $(EV)/$(1)/run.json
endef

$(EV)/sword/eval.manifest.json: $(EV)/sword.requests.jsonl $(EV)/.params | $(SWORD)
	$(call eval_run,sword,$(BASE_URL),$(MODEL))

$(EV)/sword.scores.json: $(EV)/sword/eval.manifest.json $(SWORD)
	$(SWORD) eval score --suite sword --results $(EV)/sword/samples.jsonl --bootstrap $(BOOTSTRAP) > $@.tmp
	@mv $@.tmp $@

eval-sword: $(EV)/sword.scores.json

# ---- Chinese sycophancy -------------------------------------------------------------------------------------
$(EV)/sycophancy.requests.jsonl: $(SYCO_QUESTIONS) | $(SWORD)
	@mkdir -p $(EV)
	$(SWORD) eval prompts --suite sycophancy --input $(SYCO_QUESTIONS) --out $@

$(EV)/sycophancy/eval.manifest.json: $(EV)/sycophancy.requests.jsonl $(EV)/.params | $(SWORD)
	$(call eval_run,sycophancy,$(BASE_URL),$(MODEL))

$(EV)/sycophancy.scores.json: $(EV)/sycophancy/eval.manifest.json $(SWORD)
	$(SWORD) eval score --suite sycophancy --results $(EV)/sycophancy/samples.jsonl --bootstrap $(BOOTSTRAP) > $@.tmp
	@mv $@.tmp $@

eval-sycophancy: $(EV)/sycophancy.scores.json

# ---- AdversaRiskQA ------------------------------------------------------------------------------------------
$(EV)/adversariskqa.requests.jsonl: $(wildcard $(ARQA_PROMPTS)/*.json) | $(SWORD)
	@mkdir -p $(EV)
	$(SWORD) eval prompts --suite adversariskqa --input $(ARQA_PROMPTS) --out $@

$(EV)/adversariskqa/eval.manifest.json: $(EV)/adversariskqa.requests.jsonl $(EV)/.params | $(SWORD)
	$(call eval_run,adversariskqa,$(BASE_URL),$(MODEL))

ifneq ($(JUDGE),)
$(EV)/judge.requests.jsonl: $(EV)/adversariskqa/eval.manifest.json | $(SWORD)
	$(SWORD) eval judge-prompts --samples $(EV)/adversariskqa/samples.jsonl --out $@

$(EV)/judge/eval.manifest.json: $(EV)/judge.requests.jsonl $(EV)/.judge.params | $(SWORD)
	$(call eval_run,judge,$(JUDGE_BASE_URL),$(JUDGE))

$(EV)/adversariskqa.scores.json: $(EV)/judge/eval.manifest.json $(SWORD)
	rm -rf $(EV)/adversariskqa-results
	$(SWORD) eval collect --samples $(EV)/adversariskqa/samples.jsonl --judged $(EV)/judge/samples.jsonl \
	  --model $(EV_NAME) --out $(EV)/adversariskqa-results
	$(SWORD) eval score --suite adversariskqa --results $(EV)/adversariskqa-results --json > $@.tmp
	@mv $@.tmp $@
EV_ARQA := $(EV)/adversariskqa.scores.json
else
EV_ARQA := $(EV)/adversariskqa/eval.manifest.json
endif

eval-adversariskqa: $(EV_ARQA)

# ---- AdversaRiskQA long form --------------------------------------------------------------------------------
$(EV)/longform.requests.jsonl: $(wildcard $(LF_PROMPTS)/*.json) | $(SWORD)
	@mkdir -p $(EV)
	$(SWORD) eval prompts --suite adversariskqa-longform --input $(LF_PROMPTS) --out $@

$(EV)/longform/eval.manifest.json: $(EV)/longform.requests.jsonl $(EV)/.params $(EV)/.longform.params | $(SWORD)
	$(call eval_run,longform,$(BASE_URL),$(MODEL),$(LF_FLAGS))

$(EV)/decompose.requests.jsonl: $(EV)/longform/eval.manifest.json $(EV)/.decompose.params | $(SWORD)
	$(SWORD) eval decompose-prompts --samples $(EV)/longform/samples.jsonl --format $(LF_FORMAT) --out $@

$(EV)/decompose/eval.manifest.json: $(EV)/decompose.requests.jsonl $(EV)/.decompose.params | $(SWORD)
	$(call eval_run,decompose,$(LF_DECOMPOSER_BASE_URL),$(LF_DECOMPOSER))

$(EV)/verify.requests.jsonl: $(EV)/decompose/eval.manifest.json $(EV)/.verify.params | $(SWORD)
	$(SWORD) eval verify-prompts --samples $(EV)/longform/samples.jsonl --decomposed $(EV)/decompose/samples.jsonl \
	  --api $(LF_API) --format $(LF_FORMAT) --out $@

$(EV)/verify/eval.manifest.json: $(EV)/verify.requests.jsonl $(EV)/.verify.params | $(SWORD)
	$(call eval_run,verify,$(LF_VERIFIER_BASE_URL),$(LF_VERIFIER),--api $(LF_API))

$(EV)/longform.scores.json: $(EV)/verify/eval.manifest.json $(EV)/.lfscore.params $(SWORD)
	rm -rf $(EV)/longform-results
	$(SWORD) eval collect-longform --samples $(EV)/longform/samples.jsonl --decomposed $(EV)/decompose/samples.jsonl \
	  --verified $(EV)/verify/samples.jsonl --model $(EV_NAME) --out $(EV)/longform-results > $(EV)/longform-collect.json
	$(SWORD) eval score --suite adversariskqa-longform --results $(EV)/longform-results --k $(LF_K) \
	  --bootstrap $(BOOTSTRAP) --out $(EV)/longform-report > $@.tmp
	@mv $@.tmp $@

eval-longform: $(EV)/longform.scores.json

# ---- report -------------------------------------------------------------------------------------------------
$(EV)/report.md: $(EV)/sword.scores.json $(EV)/sycophancy.scores.json $(EV_ARQA) $(RUN)/translate.manifest.json $(SWORD)
	$(SWORD) eval chain-report --dir $(EV) --run $(RUN) --title '$(MODEL)'

eval: $(EV)/report.md $(if $(LONGFORM),$(EV)/longform.scores.json)
	@echo "eval: $(EV)/report.md"

# ---- every evaluated model side by side ----------------------------------------------------------------------
EV_COMPARE      := $(RUN)/eval-compare
COMPARE_SAMPLES := $(sort $(wildcard $(RUN)/eval/*/sword/samples.jsonl))

# With the run's sword.parquet (and COMPARE_TIERS not 0) accuracy is also split by falsity tier (--benchmark).
COMPARE_TIERS     ?= 1
COMPARE_BENCHMARK := $(if $(filter-out 0,$(COMPARE_TIERS)),$(wildcard $(RUN)/sword.parquet))

$(EV_COMPARE)/report.html: $(COMPARE_SAMPLES) $(COMPARE_BENCHMARK) $(SWORD)
	@[ -n '$(COMPARE_SAMPLES)' ] || { echo "eval-compare: no $(RUN)/eval/*/sword/samples.jsonl (run make eval first)" >&2; exit 2; }
	$(SWORD) eval compare --results $(COMPARE_SAMPLES) --out $(EV_COMPARE) --bootstrap $(BOOTSTRAP) \
	  $(if $(COMPARE_VARIANT),--variant $(COMPARE_VARIANT)) $(if $(COMPARE_BENCHMARK),--benchmark $(COMPARE_BENCHMARK))

eval-compare: $(EV_COMPARE)/report.html
	@echo "eval-compare: $(EV_COMPARE)/report.html"

# pipeline/Makefile's recipes name themselves as $(lastword $(MAKEFILE_LIST)): take this file off the list
# again so that they still see pipeline/Makefile.
MAKEFILE_LIST := $(filter-out $(lastword $(MAKEFILE_LIST)),$(MAKEFILE_LIST))
