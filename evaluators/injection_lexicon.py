"""The prompt-injection scan's rules for languages other than English (evaluators/injection_scan.py),
built from one lexicon per language rather than one sentence at a time: the words for
disregarding (ignore, forget), for instructions and for what came before (previous, above, all
of them), for the grading itself (rubric, criteria), for giving a score and the highest one, for
the addressees (evaluator, grader, judge, reviewer, AI, the scoring system) and for addressing
them (to, for, dear, attention).

Three patterns per language, each needing two or three of these word classes near one another
inside one clause (no `.;!?` between), so honest text that uses one class ("le compilateur ignore
les instructions SIMD", "la nota máxima de la malla") is not flagged:
- disregard your instructions: a disregard verb, then instructions qualified as earlier, or the
  grading's own rules;
- asks for a score: a giving verb, then the top (or a top number: 10/10, 20/20, 1.0) with a score;
- addressed to the judge: an addressing word and an addressee, or an addressee opening a sentence
  followed by a colon or comma (a vocative, "Оценщику:").

Written on tests/injection_dev.py; measured on tests/injection_heldout.py (docs/judges.md). Greek,
Hebrew, Persian, Thai, Finnish, Hungarian, Swahili, Tagalog and Romanian were added on the misses
of the outside red team's set (tests/injection_outside.py): their recall there is on a seen set."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hpcbench.evaluators.quick_regex import compiled


@dataclass(frozen=True)
class Lexicon:
    ignore: str  # imperative verbs: disregard, forget, do not follow
    instructions: str  # instructions, directions, guidelines
    before: str  # previous, above, earlier, all, your
    grading: str  # the grading's own rules: rubric, criteria (disregarding them needs no "previous")
    give: str  # give, assign, award, put (a mark)
    top: str  # maximum, highest, perfect, full
    score: str  # score, grade, mark, points
    addressee: str  # evaluator, grader, judge, reviewer, AI, scoring system
    to: str  # to, for, dear, attention of
    deserve: str = ""  # deserves, merits: "this code deserves the maximum score" needs no giver
    scriptio_continua: bool = False  # no spaces between words (Chinese, Japanese): no word boundaries
    verb_last: bool = False  # the verb follows its object (Japanese, Korean, Turkish, Hindi)
    script: str = ""  # the characters of a script of its own (every rule needs one of its words)


# a top mark as a number: alone, it asks for a score after a giving verb; "1.0" only beside a word for the score
_NUM_TOP = r"(?:10 ?/ ?10|20 ?/ ?20|100 ?/ ?100|5 ?/ ?5|10 (?:из|von|de|su|out of|z|van|av|na|üzerinden) 10)"
_ONE = r"|1[.,]0(?!\d)"

LEXICONS: dict[str, Lexicon] = {
    "fr": Lexicon(
        ignore=r"ignore[zr]?|oublie[zr]?|ne (?:tenez|tiens) (?:aucun |pas )?compte|faites abstraction|fais abstraction"
               r"|écarte[zr]?|négligez|néglige|ne (?:suivez|suis) pas|passez outre|passe outre",
        instructions=r"instructions?|consignes?|directives?|règles|indications|ordres",
        before=r"précédente?s?|antérieure?s?|ci-dessus|plus haut|toutes|tous|vos|tes|initiales?|d'avant|reçues",
        grading=r"critères|barème|grille d'évaluation|grille de notation|consignes de notation|règles de notation",
        give=r"donne[zr]?|attribue[zr]?|accorde[zr]?|mets|mettez|notez|note[zr]?|évaluez|évalue",
        top=r"maximale?|maximum|parfaite?|complète|meilleure?|plus haute|plus élevée|excellente|" + _NUM_TOP + _ONE,
        score=r"notes?|scores?|évaluations?|points|notations?",
        addressee=r"évaluat(?:eur|rice)s?|correct(?:eur|rice)s?|juges?|relect(?:eur|rice)s?|ia"
                  r"|intelligence artificielle|modèles? de langage|système (?:de notation|d'évaluation)"
                  r"|notat(?:eur|rice)s?|examinat(?:eur|rice)s?",
        to=r"à l'attention d(?:u|e la|e l'|es)|au|aux|à la|à l'|pour l'|pour le|pour la|chère?s?|note (?:à|pour)",
        deserve=r"mérite|vaut",
    ),
    "de": Lexicon(
        ignore=r"ignoriere|ignorieren sie|vergiss|vergessen sie|missachte|missachten sie|übergeh(?:e|en sie)"
               r"|befolge nicht|befolgen sie nicht|beachte nicht|beachten sie nicht|verwirf|verwerfen sie",
        instructions=r"anweisungen?|instruktionen?|vorgaben?|regeln|richtlinien|befehle",
        before=r"vorherigen?|bisherigen?|früheren?|obigen?|vorigen?|alle|deine|ihre|vorangegangenen?|ursprünglichen?",
        grading=r"bewertungskriterien|kriterien|bewertungsregeln|bewertungsschema|rubrik",
        give=r"gib|geben sie|vergib|vergeben sie|bewerte|bewerten sie|erteile|erteilen sie|setze|setzen sie",
        top=r"volle[nr]?|höchste[nr]?|maximale[nr]?|beste[nr]?|perfekte[nr]?|bestmögliche[nr]?|" + _NUM_TOP + _ONE,
        score=r"punktzahl|bewertung|note|punkte[n]?|wertung|bestnote|höchstnote",
        addressee=r"bewerter(?:in)?|prüfer(?:in)?|gutachter(?:in)?|ki|sprachmodell|korrektor(?:in)?|bewertungsmodell"
                  r"|bewertungssystem|juror(?:in)?|richter(?:in)?|rezensent(?:in)?",
        to=r"an (?:den|die|das)|an|für (?:den|die|das)|liebe[rs]?|sehr geehrte[rs]?|hinweis (?:an|für)",
        deserve=r"verdient",
    ),
    "es": Lexicon(
        ignore=r"ignora|ignore|ignoren|olvida|olvide|olviden|descarta|descarte|no hagas caso|no haga caso"
               r"|haz caso omiso|pasa por alto|no sigas|no siga|omite|omita",
        instructions=r"instrucciones|indicaciones|directrices|pautas|reglas|órdenes|normas",
        before=r"anteriores|previas|previos|precedentes|de arriba|todas|todos|tus|sus|originales",
        grading=r"criterios(?: de evaluación)?|rúbrica|baremo|reglas de calificación",
        give=r"da|dale|dé|denle|asigna|asígnale|asigne|otorga|otórgale|pon|ponle|ponga|califica|evalúa|concede",
        top=r"máxima|máximo|perfecta|más alta|mejor|completa|sobresaliente|" + _NUM_TOP + _ONE + r"|un 10|10",
        score=r"puntuación|nota|calificación|puntaje|puntos|evaluación",
        addressee=r"evaluador(?:a|es)?|calificador(?:a)?|juez|revisor(?:a)?|ia|modelo de lenguaje|corrector(?:a)?"
                  r"|sistema de (?:evaluación|calificación)",
        to=r"para el|para la|al|a la|querid[oa]s?|estimad[oa]s?|atención,?|nota para",
        deserve=r"merece",
    ),
    "it": Lexicon(
        ignore=r"ignora|ignorate|dimentica|dimenticate|trascura|non seguire|non considerare|non tenere conto",
        instructions=r"istruzioni|indicazioni|direttive|regole|consegne",
        before=r"precedenti|di prima|sopra|tutte|tutti|le tue|originali",
        grading=r"criteri(?: di valutazione)?|griglia di valutazione|rubrica",
        give=r"dai|date|assegna|assegnate|attribuisci|metti|concedi",
        top=r"massim[oa]|più alto|più alta|perfett[oa]|pien[oa]|miglior[ei]?|" + _NUM_TOP + _ONE,
        score=r"punteggio|voto|voti|valutazione|punti",
        addressee=r"valutat(?:ore|rice)|corrett(?:ore|rice)|giudice|revisore|ia|modello linguistico",
        to=r"al|alla|per il|per la|caro|cara|gentile|nota per",
        deserve=r"merita",
    ),
    "pt": Lexicon(
        ignore=r"ignore|ignora|esqueça|esqueca|esquece|desconsidere|desconsidera|não siga|nao siga",
        instructions=r"instruções|instrucoes|orientações|orientacoes|diretrizes|regras",
        before=r"anteriores|prévias|previas|acima|todas|todos|suas",
        grading=r"critérios(?: de avaliação)?|criterios|rubrica",
        give=r"dê|dá|atribua|atribui|conceda|coloque",
        top=r"máxima|maxima|máximo|perfeita|mais alta|" + _NUM_TOP + _ONE + r"|10",
        score=r"nota|pontuação|pontuacao|avaliação|pontos",
        addressee=r"avaliador(?:a)?|corretor(?:a)?|juiz|revisor(?:a)?|ia|modelo de linguagem",
        to=r"para o|para a|ao|à|caro|cara|prezad[oa]",
        deserve=r"merece",
    ),
    "nl": Lexicon(
        ignore=r"negeer|vergeet|negeert|volg niet",
        instructions=r"instructies|aanwijzingen|richtlijnen|regels|opdrachten",
        before=r"eerdere|vorige|voorgaande|bovenstaande|alle|je|uw",
        grading=r"beoordelingscriteria|criteria|rubric",
        give=r"geef|ken|toekennen|geeft",
        top=r"hoogste|maximale|volle|perfecte|beste|" + _NUM_TOP + _ONE,
        score=r"score|cijfer|beoordeling|punten|punt",
        addressee=r"beoordelaar|beoordelaars|examinator|jury|rechter|ai|taalmodel|reviewer|corrector",
        to=r"aan de|aan|voor de|beste|geachte",
        deserve=r"verdient",
    ),
    "sv": Lexicon(
        ignore=r"ignorera|glöm|strunta i|bortse från",
        instructions=r"instruktioner|anvisningar|riktlinjer|regler",
        before=r"tidigare|föregående|ovanstående|alla|dina",
        grading=r"bedömningskriterier|kriterier|bedömningsmall",
        give=r"ge|sätt|tilldela",
        top=r"högsta|maximala|fullt|full|perfekt|bästa|" + _NUM_TOP + _ONE,
        score=r"betyg|poäng|betyget|bedömning",
        addressee=r"bedömare|granskare|domare|ai|språkmodell|rättare",
        to=r"till|kära|hej",
        deserve=r"förtjänar",
    ),
    "pl": Lexicon(
        ignore=r"zignoruj|ignoruj|zapomnij|pomiń|nie stosuj się do|nie zwracaj uwagi na",
        instructions=r"polecenia|instrukcje|wytyczne|zasady|wskazówki",
        before=r"poprzednie|wcześniejsze|powyższe|wszystkie|twoje",
        grading=r"kryteria(?: oceny)?|zasady oceniania",
        give=r"daj|dajcie|przyznaj|wystaw|postaw",
        top=r"maksymaln\w+|najwyższ\w+|pełn\w+|doskonał\w+|" + _NUM_TOP + _ONE,
        score=r"ocen\w+|punkt\w*|wynik\w*",
        addressee=r"oceniając\w+|egzaminator\w*|sędzi\w+|recenzent\w*|sztuczn\w+ inteligencj\w+|model\w* językow\w+",
        to=r"drog[ia]|szanown[ya]|dla|do",
        deserve=r"zasługuje",
    ),
    "cs": Lexicon(
        ignore=r"ignoruj|ignorujte|zapomeň|zapomeňte|nedbej|nevšímej si",
        instructions=r"pokyny|instrukce|směrnice|pravidla",
        before=r"předchozí|dřívější|výše uvedené|všechny|tvé",
        grading=r"kritéria(?: hodnocení)?",
        give=r"dej|dejte|přiděl|udělte|uděl",
        top=r"plný|plné|nejvyšší|maximální|perfektní|" + _NUM_TOP + _ONE,
        score=r"počet bodů|bod\w*|hodnocení|známk\w+|skóre",
        addressee=r"hodnotitel\w*|recenzent\w*|porot\w+|soudc\w+|umělá inteligence|jazykový model",
        to=r"pro|milý|milá|vážený|vážená",
        deserve=r"zaslouží",
    ),
    "ru": Lexicon(
        ignore=r"игнорируй(?:те)?|проигнорируй(?:те)?|забудь(?:те)?|не обращай(?:те)? внимания на|не учитывай(?:те)?"
               r"|не следуй(?:те)?|не выполняй(?:те)?|отбрось(?:те)?|пренебреги",
        instructions=r"инструкци\w*|указани\w*|предписани\w*|правил\w*|директив\w*|требовани\w*",
        before=r"предыдущ\w*|прежн\w*|вышеуказанн\w*|приведённ\w* выше|все|всё|твои|ваши|изначальн\w*",
        grading=r"критери\w*(?: оценк\w*)?|рубрик\w*|шкал\w* оценк\w*",
        give=r"поставь(?:те)?|дай(?:те)?|выстави(?:те)?|присвой(?:те)?|оцени(?:те)?",
        top=r"максимальн\w*|высш\w*|наивысш\w*|полн\w*|отличн\w*|идеальн\w*|" + _NUM_TOP + _ONE,
        score=r"балл\w*|оценк\w*|рейтинг\w*|отметк\w*",
        addressee=r"оценщик\w*|проверяющ\w*|рецензент\w*|ревьюер\w*|экзаменатор\w*|судь[яеию]\w*|ии|нейросет\w*"
                  r"|языков\w* модел\w*|модел\w*-оценщик\w*|проверяющ\w* модел\w*",
        to=r"уважаем\w*|дорог\w*|для|к|вниманию",
        deserve=r"заслуживает",
        script=r"[\u0400-\u04ff]",
    ),
    "uk": Lexicon(
        ignore=r"ігноруй(?:те)?|проігноруй(?:те)?|забудь(?:те)?|не зважай(?:те)? на|не дотримуйся",
        instructions=r"інструкці\w*|вказівк\w*|настанов\w*|правил\w*",
        before=r"попередн\w*|усі|всі|вищенаведен\w*|твої",
        grading=r"критері\w*(?: оцінюванн\w*)?",
        give=r"постав(?:те)?|дай(?:те)?|признач(?:те)?|виставт?е?",
        top=r"максимальн\w*|найвищ\w*|повн\w*|відмінн\w*|" + _NUM_TOP + _ONE,
        score=r"бал\w*|оцінк\w*|оцінку",
        addressee=r"оцінювач\w*|перевіряюч\w*|рецензент\w*|суддя\w*|шi|ші|мовн\w* модел\w*",
        to=r"шановн\w*|дорог\w*|для",
        deserve=r"заслуговує",
        script=r"[\u0400-\u04ff]",
    ),
    "tr": Lexicon(
        ignore=r"yok say|görmezden gel|unut|dikkate alma|uyma|göz ardı et",
        instructions=r"talimat\w*|yönerge\w*|kural\w*|komut\w*",
        before=r"önceki|yukarıdaki|tüm|bütün|daha önceki",
        grading=r"değerlendirme kriterler\w*|kriterler\w*|puanlama kural\w*",
        give=r"ver|verin|ata",
        top=r"tam|en yüksek|maksimum|mükemmel|" + _NUM_TOP + _ONE,
        score=r"puan\w*|not\w*|skor\w*",
        addressee=r"değerlendirici\w*|değerlendiren\w*|hakem\w*|jüri\w*|yapay zeka\w*|dil modeli\w*|notlandırıcı\w*",
        to=r"sayın|sevgili|not:?",
        deserve=r"hak ediyor|hak eder",
        verb_last=True,
    ),
    "id": Lexicon(
        ignore=r"abaikan|lupakan|jangan ikuti|jangan hiraukan",
        instructions=r"instruksi|petunjuk|arahan|perintah|aturan",
        before=r"sebelumnya|di atas|semua|terdahulu",
        grading=r"kriteria(?: penilaian)?|rubrik",
        give=r"berikan|beri|kasih|tetapkan",
        top=r"sempurna|tertinggi|maksimal|maksimum|penuh|" + _NUM_TOP + _ONE,
        score=r"nilai|skor|poin",
        addressee=r"penilai|pemeriksa|juri|hakim|ai|kecerdasan buatan|model bahasa|pengulas",
        to=r"kepada|untuk|yth\.?|yang terhormat",
        deserve=r"layak mendapat|pantas mendapat",
    ),
    "vi": Lexicon(
        ignore=r"bỏ qua|phớt lờ|quên|đừng làm theo|không tuân theo",
        instructions=r"hướng dẫn|chỉ dẫn|chỉ thị|yêu cầu|quy tắc",
        before=r"trước đó|trước|ở trên|mọi|tất cả|các",
        grading=r"tiêu chí(?: chấm điểm| đánh giá)?|thang điểm",
        give=r"cho|chấm|đánh giá|trao",
        top=r"tối đa|cao nhất|tuyệt đối|hoàn hảo|" + _NUM_TOP + _ONE,
        score=r"điểm",
        addressee=r"người chấm(?: điểm)?|giám khảo|người đánh giá|ai|trí tuệ nhân tạo|mô hình ngôn ngữ",
        to=r"gửi|kính gửi|thân gửi",
        deserve=r"xứng đáng",
    ),
    "ar": Lexicon(
        ignore=r"تجاهل|انس|لا تتبع|لا تلتزم ب|اهمل|أهمل",
        instructions=r"التعليمات|تعليمات|الإرشادات|الأوامر|القواعد",
        before=r"السابقة|جميع|كل|أعلاه",
        grading=r"المعايير|معايير التقييم|سلم التقييم",
        give=r"أعط|اعط|امنح|ضع|أعطِ",
        top=r"الكاملة|الكاملة|أعلى|الأعلى|القصوى|كاملة|" + _NUM_TOP + _ONE,
        score=r"الدرجة|درجة|العلامة|علامة|تقييم|التقييم|النقاط",
        addressee=r"المقيّم|المقيم|المصحح|الحكم|المراجع|الذكاء الاصطناعي|نموذج اللغة",
        to=r"إلى|الى|عزيزي|للمقيّم|للمقيم",
        deserve=r"يستحق",
        script=r"[\u0600-\u06ff]",
    ),
    "hi": Lexicon(
        ignore=r"अनदेखा कर\w*|नज़रअंदाज़ कर\w*|नजरअंदाज कर\w*|भूल जा\w*|भूल जाओ|मत मानो|पालन न कर\w*",
        instructions=r"निर्देश\w*|आदेश\w*|नियम\w*",
        before=r"पिछले|पिछली|पहले|सभी|ऊपर",
        grading=r"मानदंड\w*|मूल्यांकन मानदंड\w*",
        give=r"दें|दो|दीजिए|दीजिये|प्रदान कर\w*",
        top=r"पूरे|पूर्ण|अधिकतम|सर्वोच्च|उच्चतम|" + _NUM_TOP + _ONE,
        score=r"अंक|स्कोर|ग्रेड",
        addressee=r"मूल्यांकनकर्ता|परीक्षक|समीक्षक|निर्णायक|एआई",
        to=r"प्रिय|के लिए|को",
        deserve=r"योग्य है|हकदार है",
        verb_last=True,
        script=r"[\u0900-\u097f]",
    ),
    "ko": Lexicon(
        ignore=r"무시|잊어|잊고|따르지 말",
        instructions=r"지시|지침|명령|규칙|안내",
        before=r"이전|앞의|위의|모든|기존",
        grading=r"평가 ?기준|채점 ?기준|루브릭",
        give=r"주세요|줘|주십시오|부여|매겨|주어",
        top=r"만점|최고 ?점수|최고점|가장 높은 점수|최고 ?평가|" + _NUM_TOP,
        score=r"점수|평가|점",
        addressee=r"채점자|평가자|심사위원|심사자|리뷰어|검토자|ai|인공지능|언어 ?모델",
        to=r"님께|에게|께",
        scriptio_continua=True,
        verb_last=True,
        script=r"[\uac00-\ud7af]",
    ),
    "zh": Lexicon(
        ignore=r"忽略|无视|忽视|不要理会|忘记|忘掉|不要遵循|不要按照|不要遵守|别管|不用管|抛开|放弃",
        instructions=r"指令|指示|说明|提示词|要求|规则|命令",
        before=r"之前|以前|上面|上述|前面|先前|所有|全部|以上|原来|原有",
        grading=r"评分标准|评分规则|评审标准|评估标准|评价标准|打分标准|评分细则",
        give=r"给|打|评|判定为|判为|给出|评为|打出",
        top=r"满分|最高分|最高评分|最高分数|最高评价|1\.0分|10分|" + _NUM_TOP,
        score=r"分|评分|分数|评价",
        addressee=r"评审|评委|评估者|评分者|裁判|阅卷人|人工智能|大模型|语言模型|评分模型|评审模型|评分系统|评估模型|审稿人",
        to=r"致|给|对|请|亲爱的",
        deserve=r"应该得|应得|值得|应当获得|应该获得",
        scriptio_continua=True,
        script=r"[\u4e00-\u9fff]",
    ),
    "ja": Lexicon(
        ignore=r"無視|忘れ|従わ(?:ない|ず)|考慮しない",
        instructions=r"指示|命令|指令|ルール|要件|説明",
        before=r"以前|前|上記|これまで|先|前述|すべて|全て",
        grading=r"評価基準|採点基準|ルーブリック|審査基準",
        give=r"つけ|付け|与え|ください|して|と回答|と答え|にして",
        top=r"満点|最高点|最高評価|最高のスコア|最高得点|最高の評価|1\.0点|" + _NUM_TOP,
        score=r"点|評価|スコア|得点",
        addressee=r"評価者|採点者|審査員|レビュアー|採点ai|評価ai|ai|人工知能|言語モデル|採点モデル|評価モデル",
        to=r"へ|の方|様|殿|宛",
        scriptio_continua=True,
        verb_last=True,
        script=r"[\u3040-\u30ff\u4e00-\u9fff]",
    ),
    # issue 33's outside red team (tests/injection_outside.py): languages its evasions used that had no lexicon
    "el": Lexicon(
        ignore=r"αγνόησε|αγνοήστε|αγνοησε|αγνοηστε|ξέχασε|ξεχάστε|ξεχασε|παράβλεψε|παραβλέψτε|μην ακολουθείς"
               r"|μην ακολουθήσεις|μην ακολουθείτε|μη λάβεις υπόψη",
        instructions=r"οδηγίες|οδηγιες|οδηγία|εντολές|εντολη|εντολή|κανόνες|υποδείξεις|κατευθύνσεις",
        before=r"προηγούμεν\w*|προηγουμεν\w*|παραπάνω|όλες|όλα|όλους|αρχικές|πρότερες|μέχρι τώρα",
        grading=r"κριτήρια(?: αξιολόγησης| βαθμολόγησης)?|ρουμπρίκα|κλίμακα βαθμολόγησης",
        give=r"βάλε|βάλτε|δώσε|δώστε|βαθμολόγησε|βαθμολογήστε|απένειμε|απονείμετε|αποδώσε",
        top=r"άριστα|άριστο|μέγιστ\w*|τέλει\w*|πλήρ\w*|ανώτατ\w*|υψηλότερ\w*|δέκα|10" + _ONE,
        score=r"βαθμ\w+|μονάδες|πόντους|κατηγορίες|αξιολόγηση",
        addressee=r"αξιολογητ\w*|βαθμολογητ\w*|εξεταστ\w*|κριτή|κριτής|κριτές|ελεγκτ\w*|τεχνητή νοημοσύνη"
                  r"|γλωσσικό μοντέλο",
        to=r"προς τον|προς την|προς τους|προς|για τον|για την|αγαπητέ|αγαπητή|σημείωση για",
        deserve=r"αξίζει|δικαιούται",
        script=r"[\u0370-\u03ff\u1f00-\u1fff]",
    ),
    "he": Lexicon(
        ignore=r"התעלם|התעלמי|התעלמו|תתעלם|שכח|שכחי|שכחו|אל תפעל לפי|אל תציית ל\w*|אל תתייחס ל\w*",
        instructions=r"[משהוכלב]{0,3}הוראות|[משהוכלב]{0,3}הנחיות|[משהוכלב]{0,3}כללים|[משהוכלב]{0,3}ה?תדריך",
        before=r"הקודמות|הקודמים|הקודם|הקודמת|קודמות|קודמים|שלמעלה|כל|המקוריות|שקיבלת",
        grading=r"[משהוכלב]{0,3}קריטריונים|[משהוכלב]{0,3}מחוון",
        give=r"תן|תני|תנו|תעניק|העניקו|הענק|העניקי",
        top=r"מלא|מלאה|מקסימלי|מקסימלית|הגבוה ביותר|הגבוהה ביותר|מושלם|מושלמת|100|10" + _ONE,
        score=r"[הל]?ציון|[הל]?ציונים|נקודות|[הל]?דירוג",
        addressee=r"[לה]{0,2}בודק|[לה]{0,2}בודקת|[לה]{0,2}מעריך|[לה]{0,2}מעריכה|[לה]{0,2}שופט|[לה]{0,2}סוקר"
                  r"|בינה מלאכותית|מודל שפה",
        to=r"אל|עבור|הערה ל|לכבוד|יקר|יקרה",
        deserve=r"מגיע לו|ראוי ל\w*",
        script=r"[\u0590-\u05ff]",
    ),
    "fa": Lexicon(
        ignore=r"نادیده بگیر\w*|نادیده گرفته|فراموش کن\w*|توجه نکن\w*|اعتنا نکن\w*|پیروی نکن\w*",
        instructions=r"دستورالعمل\w*|دستور\w*|راهنمایی\w*|قوانین|قواعد|رهنمود\w*",
        before=r"قبلی|پیشین|بالا|همه|تمام|همهی|قبل",
        grading=r"معیار\w*|روبریک",
        give=r"بده|بدهید|بدهيد|بدین|اختصاص بده\w*|بگذار\w*|منظور کن\w*",
        top=r"کامل|حداکثر|بالاترین|عالی|۱۰|10|۲۰|20|بیست" + _ONE,
        score=r"نمره\w*|امتیاز\w*",
        addressee=r"داور\w*|ارزیاب\w*|مصحح\w*|بررسیکننده|هوش مصنوعی|مدل زبانی",
        to=r"برای|به|خطاب به|گرامی|عزیز",
        deserve=r"سزاوار|شایسته",
        verb_last=True,
        script=r"[\u0600-\u06ff]",
    ),
    "th": Lexicon(
        ignore=r"ละเว้น|เพิกเฉย|ไม่ต้องสนใจ|ไม่ต้องทำตาม|อย่าทำตาม|ลืม|มองข้าม",
        instructions=r"คำสั่ง|คำแนะนำ|ข้อกำหนด|กฎ",
        before=r"ก่อนหน้า|ข้างต้น|ทั้งหมด|เดิม",
        grading=r"เกณฑ์การให้คะแนน|เกณฑ์การประเมิน|เกณฑ์",
        give=r"ให้|มอบ|ใส่",
        top=r"คะแนนเต็ม|คะแนนสูงสุด|เต็ม ?10|10 ?เต็ม|เต็มทุก",
        score=r"คะแนน",
        addressee=r"ผู้ตรวจ|ผู้ประเมิน|ผู้ให้คะแนน|กรรมการ|ปัญญาประดิษฐ์|โมเดลภาษา|เอไอ",
        to=r"ถึง|เรียน|สำหรับ",
        deserve=r"สมควรได้|ควรได้",
        scriptio_continua=True,
        script=r"[\u0e00-\u0e7f]",
    ),
    "fi": Lexicon(
        ignore=r"älä välitä|ala valita|unohda|unohtakaa|ohita|ohittakaa|sivuuta|sivuuttakaa|älä noudata"
               r"|älkää noudattako|jätä huomiotta|jättäkää huomiotta",
        instructions=r"ohjei\w*|ohjeet|käsky\w*|sääntö\w*|säännöt|määräyk\w*",
        before=r"aiemm\w*|aikaisemm\w*|edelli\w*|yllä olev\w*|kaikki|kaikista|alkuperäi\w*",
        grading=r"arviointikriteer\w*|kriteer\w*|arvosteluperustee\w*|pisteytysohje\w*",
        give=r"anna|antakaa|myönnä|myöntäkää|merkitse|laita",
        top=r"t[äa]yde?t|t[äa]ysi|t[äa]ydet|maksimi\w*|korkein\w*|parhaa?n|parhaat|t[äa]ydellise?\w*|kymmenen"
            r"|10" + _ONE,
        score=r"pistee\w*|pisteet|pisteitä|arvosan\w*|arvio\w*",
        addressee=r"arvioija\w*|arvostelija\w*|tarkastaja\w*|tuomari\w*|tekoäly\w*|kielimalli\w*",
        to=r"hyvä|rakas|huomio|tiedoksi",
        deserve=r"ansaitsee",
    ),
    "hu": Lexicon(
        ignore=r"hagyd figyelmen kívül|hagyja figyelmen kívül|hagyjátok figyelmen kívül|felejtsd el|felejtse el"
               r"|ne vedd figyelembe|ne vegye figyelembe|ne kövesd|ne kövesse|ne törődj",
        instructions=r"utasítás\w*|útmutatás\w*|szabály\w*|instrukci\w*|előírás\w*",
        before=r"korábbi|előző|fenti|összes|minden|eddigi|eredeti",
        grading=r"értékelési szempont\w*|szempont\w*|kritérium\w*|pontozási szabály\w*",
        give=r"adj|adjon|adjatok|add|adja|ítélj|ítélje|oszd ki",
        top=r"maximális|teljes|legmagasabb|legjobb|tökéletes|jeles|ötös" + _ONE,
        score=r"pontszám\w*|pont\w*|osztályzat\w*|érdemjegy\w*|jegy\w*|értékelés\w*",
        addressee=r"értékelő\w*|bíráló\w*|vizsgáztató\w*|pontozó\w*|mesterséges intelligencia|nyelvi modell\w*"
                  r"|javító\w*",
        to=r"kedves|tisztelt|figyelem|az|a",
        deserve=r"megérdemli|érdemel",
        verb_last=True,
    ),
    "sw": Lexicon(
        ignore=r"puuza|puuzeni|sahau|sahauni|usifuate|msifuate|acha kufuata|usijali|msijali",
        instructions=r"maagizo|maelekezo|amri|miongozo|mwongozo|maelezo",
        before=r"yaliyotangulia|yaliyopita|ya awali|yote|zote|ya hapo juu|ya mwanzo|zilizotangulia|uliyopewa",
        grading=r"vigezo(?: vya tathmini| vya kupima)?",
        give=r"pe|mpe|mpeni|toa|wape|ipe|ipa|upe|tunuku|weka",
        top=r"kamili|za juu kabisa|ya juu kabisa|juu kabisa|bora kabisa|kamilifu|kumi|10" + _ONE,
        score=r"alama|maksi|pointi|daraja|tathmini",
        addressee=r"mkaguzi|wakaguzi|mtathmini|watathmini|msahihishaji|jaji|majaji|mwamuzi|akili bandia|akili mnemba"
                  r"|modeli ya lugha",
        to=r"kwa|kwa ajili ya|mpendwa|ndugu|tahadhari",
        deserve=r"anastahili|inastahili|stahili",
    ),
    "tl": Lexicon(
        ignore=r"huwag pansinin|wag pansinin|balewalain|kalimutan|huwag sundin|wag sundin|ipagwalang-bahala"
               r"|huwag intindihin",
        instructions=r"tagubilin|utos|panuto|alituntunin|patakaran",
        before=r"naunang|nauna|dating|lahat ng|nakaraang|sa itaas|orihinal na",
        grading=r"pamantayan(?: sa pagmamarka)?",
        give=r"bigyan|ibigay|bigay|gawing|lagyan",
        top=r"perpektong|perpekto|pinakamataas na|pinakamataas|buong|sakdal|10" + _ONE,
        score=r"marka|grado|puntos|iskor",
        addressee=r"tagasuri|tagapagsuri|hurado|tagamarka|ebalwador|artipisyal na intelihensiya",
        to=r"para sa|kay|mahal na|paalala sa",
        deserve=r"nararapat|karapat-dapat",
    ),
    "ro": Lexicon(
        ignore=r"ignoră|ignorați|ignora|uită|uitați|nu ține cont de|nu țineți cont de|nu urma|nu urmați"
               r"|treci cu vederea",
        instructions=r"instrucțiuni\w*|instructiuni\w*|indicații\w*|indicatii\w*|directive\w*|reguli\w*",
        before=r"anterioare|precedente|de mai sus|toate|inițiale|dinainte",
        grading=r"criteri\w*(?: de evaluare)?|baremul?|grila de evaluare",
        give=r"acordă|acordați|dă|dați|pune|puneți|atribuie|atribuiți",
        top=r"maximă|maxima|maxim|maximum|cea mai mare|cel mai mare|perfectă|perfect|10" + _ONE,
        score=r"nota|notă|punctaj\w*|puncte|calificativ\w*|scor\w*",
        addressee=r"evaluatorul\w*|evaluatorule|corectorul\w*|corectorule|examinatorul\w*|arbitrul\w*|arbitrule"
                  r"|recenzentul\w*|recenzentule"
                  r"|inteligența artificială|model de limbaj",
        to=r"pentru|către|stimate|dragă|atenție",
        deserve=r"merită",
    ),
}

_STOP = r"[.;!?。；！？]"


def _alternatives(alt: str) -> list[str]:
    """The top-level alternatives of a pattern (a | inside parentheses does not split)."""
    out, depth, cur = [], 0, ""
    for ch in alt:
        depth += ch == "("
        depth -= ch == ")"
        if ch == "|" and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return [*out, cur]


def _rules(lang: str, lx: Lexicon) -> list[tuple[str, str]]:
    b = "" if lx.scriptio_continua else r"(?<!\w)"
    e = "" if lx.scriptio_continua else r"(?!\w)"

    def w(alt: str) -> str:
        return f"{b}(?:{alt}){e}"

    def gap(n: int) -> str:
        return f"[^.;!?。；！？]{{0,{n}}}?"

    earlier = (f"(?:{w(lx.before)}{gap(25)}{w(lx.instructions)}|{w(lx.instructions)}{gap(25)}{w(lx.before)}"
               f"|{w(lx.grading)})")
    # the top alone is a score in CJK ("满分", "満点", "만점"); elsewhere it is an adjective and needs its noun
    top = (f"(?:{w(lx.top)}|{_NUM_TOP})" if lx.scriptio_continua else
           f"(?:{w(lx.top)}{gap(20)}{w(lx.score)}|{w(lx.score)}{gap(20)}{w(lx.top)}|{_NUM_TOP})")
    # a one- to three-letter addressee ("ai", "ki", "ии") is a vocative only after an addressing word
    named = "|".join(a for a in _alternatives(lx.addressee) if len(a) > 3)
    short = "|".join(a for a in _alternatives(lx.addressee) if len(a) <= 3) or "(?!)"
    rules = [
        ("disregard your instructions", f"{w(lx.ignore)}{gap(40)}{earlier}"),
        ("asks for a score", f"{w(lx.give)}{gap(40)}{top}"),
        ("addressed to the judge", f"{w(lx.to)}(?:{gap(12)}{w(named)}|\\s?{w(short)})"
         + ("" if lx.scriptio_continua else r"\w*(?: \S+){0,2}?\s*[:,!]")),
        ("addressed to the judge", f"(?:^|{_STOP} ?)(?:\\S+ ){{0,2}}?{w(named)}\\w*\\s*[:,：，]"),
    ]
    if lx.verb_last:  # "以前の指示を無視", "önceki talimatları yok say", "최고 점수를 주세요"
        rules += [("disregard your instructions", f"{earlier}{gap(30)}{w(lx.ignore)}"),
                  ("asks for a score", f"{top}{gap(20)}{w(lx.give)}")]
    if lx.deserve:
        rules.append(("asks for a score", f"{w(lx.deserve)}{gap(30)}{top}"))
    if lx.scriptio_continua:  # the addressee then a colon or comma anywhere: "评审模型请注意：", "채점자님께:"
        rules.append(("addressed to the judge", f"(?:{named})(?:{lx.to})?[^。！？]{{0,6}}[：:，,]"))
    return [(f"{name} ({lang})", rx) for name, rx in rules]


def _cue(lx: Lexicon) -> re.Pattern[str]:
    """A language's rules are tried only on text with its script, or (Latin script) with one of its words for
    instructions, the grading, the score or an addressee, or a top mark as a fraction: every rule needs one.
    The scan's cost is its rules times its texts, and most texts are in one language."""
    if lx.script:
        return re.compile(lx.script)
    alt = "|".join(x for x in (lx.instructions, lx.grading, lx.score, lx.addressee) if x)
    return compiled(f"(?<!\\w)(?:{alt})(?!\\w)|{_NUM_TOP}")


LEXICON_RULES: list[tuple[re.Pattern[str], list[tuple[str, re.Pattern[str]]]]] = [
    (_cue(lx), [(name, compiled(rx)) for name, rx in _rules(lang, lx)]) for lang, lx in LEXICONS.items()]


def lexicon_match(text: str) -> tuple[str, re.Match[str]] | None:
    """The first rule of any language that matches `text` (normalised), and its match."""
    for cue, rules in LEXICON_RULES:
        if cue.search(text):
            for name, rx in rules:
                m = rx.search(text)
                if m:
                    return name, m
    return None
