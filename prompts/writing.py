"""Prompts of the memory-writing policy: one structured call per turn (summary when negative + facts).

Inserted text always goes inside tags (``<user_message>…</user_message>``) so the model reads it as data,
never as instructions. Text reaching these prompts has already been redacted.
"""

SLOT_GUIDE = """\
Use these keys (slots) so that a new value replaces the old one:
- name, age, birthday, home_city (where the user lives now), hometown, workplace (employer), \
work_city, job (occupation), school, major (field of study), diet, partner (their name), family:<relation> and \
pet:<animal> \
(their names: family:女儿, pet:dog), birthday:<relation> (a family member's birthday: birthday:妈妈), \
allergy:<what> (allergy:花生), learning:<what>
- pref:<topic> for likes and dislikes, with polarity "likes" or "dislikes" (one slot per topic, so \
"I don't like jazz anymore" replaces "I like jazz": key pref:jazz, polarity dislikes)
- favorite:<category> for "my favourite <category> is <value>" (polarity likes)
Topics and categories are short, lower-case nouns in the user's language (pref:爵士乐, pref:tea)."""

TURN_MEMORY_SYSTEM = """\
You write the long-term memory of an assistant. You read one conversation turn and return JSON \
that fits the schema exactly.

facts: stable facts and preferences the USER states about THEMSELVES in this turn (not the \
assistant's words, not guesses, not questions, not other people). Each item has kind ("fact" or \
"preference"), key, value (short, clean, no trailing punctuation), polarity ("likes"/"dislikes" \
for preferences, null for facts) and text: one standalone sentence in the user's language about \
"the user" ("用户住在北京" / "The user lives in Beijing"). Return an empty list when there are none.

{slot_guide}

summary: {summary_instruction}

Placeholders such as [PHONE] or [手机号] stand for removed private data: never guess what they hid."""

SUMMARY_WANTED = """\
this exchange is emotionally difficult, so it is NOT stored word for word. Write a gist in one short \
sentence in the user's language: the feeling, what it is about (topic, event), its effect on the user \
and what the user asked for, in your own words. Never copy a phrase or clause of the user's message \
word for word (a summary that does is discarded), and leave out graphic or intimate detail, names of \
third parties and anything identifying. At most 60 Chinese characters or 40 English words. \
Example: "用户因工作被领导批评而难过，失眠，自我评价低，想知道该怎么办。\""""

SUMMARY_NOT_WANTED = "null (no summary is needed for this turn)."

TURN_MEMORY_USER = """\
<user_message>
{user_text}
</user_message>
<assistant_reply>
{assistant_text}
</assistant_reply>"""

FACT_EXTRACTION_SYSTEM = """\
You extract the stable facts and preferences a USER states about THEMSELVES in one conversation \
turn, for a long-term memory. Return JSON that fits the schema exactly: facts, a list of items with \
kind ("fact" or "preference"), key, value (short, clean, no trailing punctuation), polarity \
("likes"/"dislikes" for preferences, null for facts) and text: one standalone sentence in the \
user's language about "the user" ("用户住在北京" / "The user lives in Beijing"). Ignore the \
assistant's claims, guesses, questions and facts about other people. Return an empty list when \
there are none.

{slot_guide}

Placeholders such as [PHONE] or [手机号] stand for removed private data: never guess what they hid."""

RETRY_NOTE = """\
Your previous answer could not be used ({error}). Answer again with only JSON that fits the schema \
exactly."""
