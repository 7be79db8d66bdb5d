"""Pet words: which animal a kind or a breed names, in Chinese and English (memory/pets.py)."""

from __future__ import annotations

import pytest

from mneme.memory.pets import animal_of, same_animal


@pytest.mark.parametrize(("word", "animal"), [
    ("狗", "dog"), ("小狗", "dog"), ("金毛狗", "dog"), ("柯基", "dog"), ("金毛", "dog"), ("柴犬", "dog"),
    ("rescue dog", "dog"), ("golden retriever", "dog"), ("German Shepherd", "dog"), ("corgi", "dog"),
    ("猫", "cat"), ("橘猫", "cat"), ("布偶猫", "cat"), ("英短", "cat"), ("tabby", "cat"), ("ginger cat", "cat"),
    ("兔子", None), ("hamster", None), ("熊猫", None), ("热狗", None), ("hotdog", None), ("hot dog", None),
    ("shepherd", None), ("狗叫", None), ("", None)])
def test_a_kind_or_a_breed_names_its_animal(word: str, animal: str | None) -> None:
    assert animal_of(word) == animal


def test_a_pet_named_by_its_breed_is_of_the_kind_asked_after() -> None:
    assert same_animal("柯基", "狗") and same_animal("golden retriever", "dog") and same_animal("金毛", "dog")
    assert same_animal("rescue dog", "dog") and same_animal("布偶猫", "猫") and same_animal("tabby", "cat")
    assert not same_animal("柯基", "猫") and not same_animal("tabby", "dog") and not same_animal("兔子", "狗")
    assert same_animal("小白兔子", "兔子") and not same_animal("仓鼠", "兔子")  # other pets: the word itself
    assert not same_animal("金毛", "柯基") and same_animal("狗", "柯基")  # a breed asked: that breed or the bare kind
    assert not same_animal("熊猫", "猫") and not same_animal("热狗", "狗")
