<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="en" sourcelanguage="en">
<context>
    <name>EnvironmentsPage</name>
    <message numerus="yes">
        <location filename="../../app/ui/pages/environments.py" line="151"/>
        <source>Searching… %n found so far.</source>
        <translation>
            <numerusform>Searching… %n found so far.</numerusform>
            <numerusform>Searching… %n found so far.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <location filename="../../app/ui/pages/environments.py" line="163"/>
        <source>%n installation(s) found. The search ran out of time before every folder was looked in: if your AI app&apos;s is not listed, use Browse… to pick its folder.</source>
        <translation>
            <numerusform>%n installation found. The search ran out of time before every folder was looked in: if your AI app&apos;s is not listed, use Browse… to pick its folder.</numerusform>
            <numerusform>%n installations found. The search ran out of time before every folder was looked in: if your AI app&apos;s is not listed, use Browse… to pick its folder.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <location filename="../../app/ui/pages/environments.py" line="166"/>
        <source>%n installation(s) found. Select one and press Next.</source>
        <translation>
            <numerusform>%n installation found. Select it and press Next.</numerusform>
            <numerusform>%n installations found. Select one and press Next.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <location filename="../../app/ui/pages/environments.py" line="180"/>
        <source>Search everywhere is done: it found %n more.</source>
        <translation>
            <numerusform>Search everywhere is done: it found %n more.</numerusform>
            <numerusform>Search everywhere is done: it found %n more.</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>FindingsPage</name>
    <message numerus="yes">
        <location filename="../../app/ui/pages/findings.py" line="105"/>
        <source>%n problem(s) stop PyTorch from loading.</source>
        <translation>
            <numerusform>%n problem stops PyTorch from loading.</numerusform>
            <numerusform>%n problems stop PyTorch from loading.</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>HistoryPage</name>
    <message numerus="yes">
        <location filename="../../app/ui/pages/history.py" line="79"/>
        <source>%n repair(s) recorded here.</source>
        <translation>
            <numerusform>%n repair recorded here.</numerusform>
            <numerusform>%n repairs recorded here.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <location filename="../../app/ui/pages/history.py" line="80"/>
        <source>%n of them still in place.</source>
        <translation>
            <numerusform>%n of them still in place.</numerusform>
            <numerusform>%n of them still in place.</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>WelcomePage</name>
    <message numerus="yes">
        <location filename="../../app/ui/pages/welcome.py" line="151"/>
        <source>%n repair(s) were made here before.</source>
        <translation>
            <numerusform>%n repair was made here before.</numerusform>
            <numerusform>%n repairs were made here before.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <location filename="../../app/ui/pages/welcome.py" line="152"/>
        <source>%n of them still in place: each can be undone.</source>
        <translation>
            <numerusform>%n of them still in place: each can be undone.</numerusform>
            <numerusform>%n of them still in place: each can be undone.</numerusform>
        </translation>
    </message>
</context>
</TS>
