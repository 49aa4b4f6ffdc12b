<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN" sourcelanguage="en">
<context>
    <name>ChecklistModel</name>
    <message>
        <location filename="../../app/ui/models.py" line="216"/>
        <source>checking…</source>
        <translation>正在检查…</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="218"/>
        <source>did not finish</source>
        <translation>未能完成</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="220"/>
        <source>confirms the same cause: {title}</source>
        <translation>印证了同一个原因：{title}</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="223"/>
        <source>no problems found</source>
        <translation>没有发现问题</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="234"/>
        <source>{check} — {result}</source>
        <translation>{check} — {result}</translation>
    </message>
</context>
<context>
    <name>ChecklistPanel</name>
    <message>
        <location filename="../../app/ui/pages/diagnose.py" line="58"/>
        <source>&amp;Stop</source>
        <translation>停止(&amp;S)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/diagnose.py" line="58"/>
        <source>Stop checking</source>
        <translation>停止检查</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/diagnose.py" line="59"/>
        <source>Checks and their results</source>
        <translation>检查项目及结果</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/diagnose.py" line="60"/>
        <source>Progress of the checks</source>
        <translation>检查进度</translation>
    </message>
</context>
<context>
    <name>DependencyTreeModel</name>
    <message>
        <location filename="../../app/ui/models.py" line="339"/>
        <source>DLL</source>
        <translation>DLL 文件</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="339"/>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="339"/>
        <source>Found by</source>
        <translation>找到方式</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="350"/>
        <source>found</source>
        <translation>已找到</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="350"/>
        <source>missing</source>
        <translation>缺失</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="351"/>
        <source>missing (needed only later)</source>
        <translation>缺失（稍后才需要）</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="352"/>
        <source>wrong type (32-bit / 64-bit)</source>
        <translation>类型不对（32 位 / 64 位）</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="353"/>
        <source>missing functions</source>
        <translation>缺少函数</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="353"/>
        <source>damaged</source>
        <translation>已损坏</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="354"/>
        <source>could not be read</source>
        <translation>无法读取</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="354"/>
        <source>something it needs cannot load</source>
        <translation>它需要的文件无法加载</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="355"/>
        <source>found only through PATH</source>
        <translation>只能通过 PATH 找到</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="396"/>
        <source>loaded by PyTorch</source>
        <translation>由 PyTorch 加载</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="400"/>
        <source> (delay-loaded)</source>
        <translation>（延迟加载）</translation>
    </message>
</context>
<context>
    <name>DependencyTreePanel</name>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="88"/>
        <source>&amp;Problems only</source>
        <translation>只看有问题的(&amp;P)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="88"/>
        <source>Show only DLLs with a problem</source>
        <translation>只显示有问题的 DLL</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="89"/>
        <source>Search for a DLL…</source>
        <translation>搜索 DLL…</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="90"/>
        <source>Search for a DLL</source>
        <translation>搜索 DLL</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="91"/>
        <source>Dependency tree</source>
        <translation>依赖树</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="92"/>
        <source>Details of the selected DLL</source>
        <translation>所选 DLL 的详情</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="120"/>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="121"/>
        <source>Full path</source>
        <translation>完整路径</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="121"/>
        <source>not found</source>
        <translation>未找到</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="123"/>
        <source>File version</source>
        <translation>文件版本</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="123"/>
        <location filename="../../app/ui/pages/tree.py" line="186"/>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="124"/>
        <source>Type</source>
        <translation>类型</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="126"/>
        <source>How it was found</source>
        <translation>怎样找到的</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="127"/>
        <source>It was not found: none of the folders below holds it</source>
        <translation>没有找到：下面列出的文件夹里都没有它</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="138"/>
        <source>Functions that are missing</source>
        <translation>缺少的函数</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="140"/>
        <source>Functions {importer} needs from it</source>
        <translation>{importer} 需要它提供的函数</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="129"/>
        <source>Stands for</source>
        <translation>实际对应</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="131"/>
        <source>Needed by</source>
        <translation>被谁需要</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="134"/>
        <source>Why</source>
        <translation>原因</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="144"/>
        <source>What PyTorch really loaded</source>
        <translation>PyTorch 实际加载的文件</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="151"/>
        <source>Folders searched, in order</source>
        <translation>按顺序搜索过的文件夹</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="162"/>
        <source>{name} (ordinal {number})</source>
        <translation>{name}（序号 {number}）</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="163"/>
        <source>ordinal {number}</source>
        <translation>序号 {number}</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="167"/>
        <source>and {count} more</source>
        <translation>以及另外 {count} 个</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="188"/>
        <source>{path} (version {version}), not the copy predicted here ({predicted})</source>
        <translation>{path}（版本 {version}），不是这里预计的那一份（{predicted}）</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="190"/>
        <source>{path} (version {version})</source>
        <translation>{path}（版本 {version}）</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="193"/>
        <source>not loaded by PyTorch&apos;s process</source>
        <translation>PyTorch 的进程没有加载它</translation>
    </message>
</context>
<context>
    <name>DiagnosePage</name>
    <message>
        <location filename="../../app/ui/pages/diagnose.py" line="156"/>
        <source>Checking PyTorch</source>
        <translation>正在检查 PyTorch</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/diagnose.py" line="157"/>
        <source>Each file PyTorch loads is checked, the way Windows would load it. Nothing is changed.</source>
        <translation>按照 Windows 加载的方式逐个检查 PyTorch 要加载的文件。不会做任何修改。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/diagnose.py" line="161"/>
        <source>Checking PyTorch {version} in {folder}</source>
        <translation>正在检查 {folder} 中的 PyTorch {version}</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/diagnose.py" line="167"/>
        <source>Checking… this takes a few seconds (up to a minute when PyTorch is started for real).</source>
        <translation>正在检查……需要几秒钟（实际启动 PyTorch 时最多一分钟）。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/diagnose.py" line="170"/>
        <source>Done. Press Next to see what was found.</source>
        <translation>检查完成。点击“下一步”查看结果。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/diagnose.py" line="172"/>
        <source>Stopped. Press Back to choose again, or Next to see what was found so far.</source>
        <translation>已停止。点击“上一步”重新选择，或点击“下一步”查看目前的结果。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/diagnose.py" line="174"/>
        <source>The check could not run. {reason}</source>
        <translation>检查没能运行。{reason}</translation>
    </message>
</context>
<context>
    <name>DoctorWizard</name>
    <message>
        <location filename="../../app/ui/wizard.py" line="174"/>
        <location filename="../../app/ui/wizard.py" line="206"/>
        <source>Torch DLL Doctor</source>
        <translation>Torch DLL Doctor</translation>
    </message>
    <message>
        <location filename="../../app/ui/wizard.py" line="207"/>
        <source>The repairs stay recorded, and you can still undo each one at any time: start Torch DLL Doctor again and press “See earlier repairs” on the first page.</source>
        <translation>这些修复都有记录，你随时可以撤销其中任何一个：再次启动 Torch DLL Doctor，在第一页点“查看以前的修复”。</translation>
    </message>
</context>
<context>
    <name>EnvironmentModel</name>
    <message>
        <location filename="../../app/ui/models.py" line="75"/>
        <source>Environment</source>
        <translation>环境</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="75"/>
        <location filename="../../app/ui/models.py" line="88"/>
        <source>Python</source>
        <translation>Python</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="75"/>
        <source>PyTorch</source>
        <translation>PyTorch</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="75"/>
        <source>Location</source>
        <translation>位置</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="89"/>
        <source>{folder} (virtual environment)</source>
        <translation>{folder}（虚拟环境）</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="101"/>
        <source>PyTorch is installed here: this installation can be checked.</source>
        <translation>这里装有 PyTorch：可以检查这个安装。</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="102"/>
        <source>No PyTorch here: there is nothing to check in this installation.</source>
        <translation>这里没有 PyTorch：这个安装里没有需要检查的内容。</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="91"/>
        <location filename="../../app/ui/models.py" line="95"/>
        <source>unknown</source>
        <translation>未知</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="94"/>
        <source>No PyTorch</source>
        <translation>没有 PyTorch</translation>
    </message>
    <message>
        <location filename="../../app/ui/models.py" line="95"/>
        <source>{version} ({build})</source>
        <translation>{version}（{build}）</translation>
    </message>
</context>
<context>
    <name>EnvironmentsPage</name>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="117"/>
        <source>Choose the Python installation</source>
        <translation>选择 Python 安装</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="118"/>
        <source>Pick the one your AI app uses (ComfyUI, a Stable Diffusion web UI, …).</source>
        <translation>选择你的 AI 应用所用的那一个（ComfyUI、Stable Diffusion WebUI 等）。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="119"/>
        <source>Installations appear here as they are found. Only those with PyTorch can be checked.</source>
        <translation>找到的安装会陆续显示在这里。只有装了 PyTorch 的才能检查。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="121"/>
        <source>&amp;Browse…</source>
        <translation>浏览(&amp;B)…</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="121"/>
        <source>Choose a folder that holds a Python installation</source>
        <translation>选择一个包含 Python 安装的文件夹</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="144"/>
        <source>&amp;Search everywhere</source>
        <translation>全盘搜索(&amp;S)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="144"/>
        <source>Search every drive, deeper and longer</source>
        <translation>搜索所有磁盘，搜得更深、更久</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="122"/>
        <source>Analyse a &amp;copied Windows folder…</source>
        <translation>分析复制出来的 Windows 文件夹(&amp;C)…</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="122"/>
        <source>Analyse a copied Windows drive</source>
        <translation>分析复制出来的 Windows 磁盘</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="123"/>
        <source>Try the &amp;demo computer</source>
        <translation>试用演示电脑(&amp;D)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="123"/>
        <source>Try the demo computer</source>
        <translation>试用演示电脑</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="124"/>
        <source>Python installations found</source>
        <translation>找到的 Python 安装</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="142"/>
        <source>&amp;Searching everywhere…</source>
        <translation>正在全面搜索(&amp;S)…</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="142"/>
        <source>Searching every drive</source>
        <translation>正在搜索每个磁盘</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="146"/>
        <source>This computer is not running Windows, so there is nothing here to check. Analyse a copied Windows drive, or try the demo computer to see how the assistant works.</source>
        <translation>这台电脑运行的不是 Windows，所以这里没有可检查的内容。你可以分析复制出来的 Windows 磁盘，或者试用演示电脑，看看这个助手如何工作。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="149"/>
        <source>Making the demo computer…</source>
        <translation>正在准备演示电脑…</translation>
    </message>
    <message numerus="yes">
        <location filename="../../app/ui/pages/environments.py" line="151"/>
        <source>Searching… %n found so far.</source>
        <translation>
            <numerusform>正在搜索… 目前已找到 %n 个。</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="153"/>
        <source>The search stopped before it was done. {reason}</source>
        <translation>搜索没有完成就停止了。{reason}</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="156"/>
        <source>The search ran out of time before every folder was looked in, and found no Python installation with PyTorch. Use Browse… to pick your AI app&apos;s folder, or Search everywhere, which looks longer.</source>
        <translation>查找在看完所有文件夹之前就超时了，没有找到装有 PyTorch 的 Python。请用“浏览…”选择你的 AI 程序的文件夹，或者用“全盘搜索”，它会找得更久。</translation>
    </message>
    <message numerus="yes">
        <location filename="../../app/ui/pages/environments.py" line="163"/>
        <source>%n installation(s) found. The search ran out of time before every folder was looked in: if your AI app&apos;s is not listed, use Browse… to pick its folder.</source>
        <translation>
            <numerusform>找到 %n 个安装。查找在看完所有文件夹之前就超时了：如果列表里没有你的 AI 程序所用的那个，请用“浏览…”选择它的文件夹。</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <location filename="../../app/ui/pages/environments.py" line="166"/>
        <source>%n installation(s) found. Select one and press Next.</source>
        <translation>
            <numerusform>找到 %n 个安装。选择一个，然后点击“下一步”。</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="169"/>
        <source>This is the demo computer: a built-in example, so nothing real is changed.</source>
        <translation>这是演示电脑：一个内置的示例，不会修改任何真实的东西。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="172"/>
        <source>This is a copied Windows drive: {folder}</source>
        <translation>这是一个复制出来的 Windows 磁盘：{folder}</translation>
    </message>
    <message numerus="yes">
        <location filename="../../app/ui/pages/environments.py" line="180"/>
        <source>Search everywhere is done: it found %n more.</source>
        <translation>
            <numerusform>全面搜索已完成：又找到 %n 个。</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="181"/>
        <source>Search everywhere is done: it found nothing more.</source>
        <translation>全面搜索已完成：没有找到更多。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="289"/>
        <source>The demo computer could not be made. Try again, or analyse a copied Windows drive.</source>
        <translation>没能准备好演示电脑。请再试一次，或者分析一个复制出来的 Windows 磁盘。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="160"/>
        <source>No Python installation with PyTorch was found. Use Browse… to pick your AI app&apos;s folder, or Search everywhere.</source>
        <translation>没有找到装有 PyTorch 的 Python。请用“浏览…”选择你的 AI 应用所在的文件夹，或者使用“全盘搜索”。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="248"/>
        <source>Choose the folder of your AI app or its Python</source>
        <translation>选择你的 AI 应用或其 Python 所在的文件夹</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="254"/>
        <source>The folder could not be searched. Choose another folder, or use Search everywhere.</source>
        <translation>没能搜索这个文件夹。请选择另一个文件夹，或者使用“全盘搜索”。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="259"/>
        <source>No Python installation was found in {folder}.</source>
        <translation>在 {folder} 中没有找到 Python 安装。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/environments.py" line="265"/>
        <source>Choose the folder that holds the copied drive (it has a Windows folder inside)</source>
        <translation>选择存放复制磁盘的文件夹（里面有 Windows 文件夹）</translation>
    </message>
</context>
<context>
    <name>Failure</name>
    <message>
        <location filename="../../app/ui/failure.py" line="24"/>
        <source>The same details are in the log file: {path}</source>
        <translation>日志文件里也有同样的详细信息：{path}</translation>
    </message>
</context>
<context>
    <name>FailureBox</name>
    <message>
        <location filename="../../app/ui/failure.py" line="40"/>
        <source>Torch DLL Doctor</source>
        <translation>Torch DLL Doctor</translation>
    </message>
    <message>
        <location filename="../../app/ui/failure.py" line="41"/>
        <source>Something did not work.</source>
        <translation>有一项操作没有成功。</translation>
    </message>
</context>
<context>
    <name>FindingsPage</name>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="80"/>
        <source>What we found</source>
        <translation>检查结果</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="81"/>
        <source>Problems first. Technical readers can open the dependency tree.</source>
        <translation>先列出问题。懂技术的读者可以打开依赖树。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="186"/>
        <source>Show &amp;technical details</source>
        <translation>显示技术细节(&amp;T)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="84"/>
        <source>&amp;Copy</source>
        <translation>复制(&amp;C)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="84"/>
        <source>Copy the report</source>
        <translation>复制报告</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="85"/>
        <source>Sa&amp;ve report…</source>
        <translation>保存报告(&amp;V)…</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="85"/>
        <source>Save the report to a file</source>
        <translation>把报告保存到文件</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="102"/>
        <source>Some checks could not finish or could not see everything, so this list may be incomplete.</source>
        <translation>有些检查没能完成，或者没能看到全部内容，所以这个列表可能不完整。</translation>
    </message>
    <message numerus="yes">
        <location filename="../../app/ui/pages/findings.py" line="105"/>
        <source>%n problem(s) stop PyTorch from loading.</source>
        <translation>
            <numerusform>有 %n 个问题导致 PyTorch 无法加载。</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="107"/>
        <source>PyTorch should load. There are warnings worth a look.</source>
        <translation>PyTorch 应该可以加载。有一些值得一看的警告。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="109"/>
        <source>No problems found: PyTorch should load.</source>
        <translation>没有发现问题：PyTorch 应该可以加载。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="122"/>
        <source>PyTorch started anyway when it was tried for real, so this may not matter on this computer.</source>
        <translation>实际启动时 PyTorch 仍然能启动，所以在这台电脑上这可能无关紧要。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="124"/>
        <source>&lt;b&gt;What this means:&lt;/b&gt; {text}</source>
        <translation>&lt;b&gt;这意味着：&lt;/b&gt;{text}</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="127"/>
        <source>&lt;b&gt;How we can fix it:&lt;/b&gt; {text}</source>
        <translation>&lt;b&gt;我们如何修复：&lt;/b&gt;{text}</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="144"/>
        <source>Does PyTorch fail only inside one program? Say which one:</source>
        <translation>PyTorch 只在某一个程序里出错吗？请选出是哪一个：</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="148"/>
        <source>The program that shows the error</source>
        <translation>出错的程序</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="150"/>
        <source>Check &amp;again as it starts</source>
        <translation>按它的启动方式再检查(&amp;A)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="150"/>
        <source>Check again as that program starts</source>
        <translation>按那个程序的启动方式再检查一次</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="153"/>
        <source>Checked as {program} starts.</source>
        <translation>已按{program}的启动方式检查。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="154"/>
        <source>Checked with {modules} imported before PyTorch, as your program does.</source>
        <translation>已按你的程序的方式检查：在 PyTorch 之前导入 {modules}。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="157"/>
        <source>Check PyTorch &amp;alone</source>
        <translation>只检查 PyTorch(&amp;A)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="157"/>
        <source>Check again with PyTorch alone</source>
        <translation>只用 PyTorch 再检查一次</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="165"/>
        <source>a program that imports {modules} before PyTorch</source>
        <translation>在 PyTorch 之前导入 {modules} 的程序</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="170"/>
        <source>The demo computer is a built-in example, not a real Windows computer, so PyTorch cannot be started on it. On your own computer this check starts PyTorch for real.</source>
        <translation>演示电脑只是一个内置的示例，不是真正的 Windows 电脑，所以无法在上面启动 PyTorch。在你自己的电脑上，这项检查会真正启动 PyTorch。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="183"/>
        <source>Hide &amp;technical details</source>
        <translation>隐藏技术细节(&amp;T)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="183"/>
        <source>Close the window with the dependency tree</source>
        <translation>关闭显示依赖树的窗口</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="186"/>
        <source>Show the dependency tree in a window of its own</source>
        <translation>在单独的窗口中显示依赖树</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="202"/>
        <source>The report could not be made. Try Save report… instead.</source>
        <translation>无法生成报告。请改用“保存报告…”。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/findings.py" line="206"/>
        <source>The report is copied: paste it into a forum post or a message.</source>
        <translation>报告已复制：可以粘贴到论坛帖子或消息里。</translation>
    </message>
</context>
<context>
    <name>FinishPage</name>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="64"/>
        <source>Done</source>
        <translation>完成</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="65"/>
        <source>Thank you for using Torch DLL Doctor.</source>
        <translation>感谢使用 Torch DLL Doctor。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="66"/>
        <source>&amp;Save report…</source>
        <translation>保存报告(&amp;S)…</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="66"/>
        <source>Save the report to a file</source>
        <translation>把报告保存到文件</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="67"/>
        <source>&amp;Undo these changes</source>
        <translation>撤销这些修改(&amp;U)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="67"/>
        <source>Undo every change the repairs made</source>
        <translation>撤销修复所做的全部修改</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="68"/>
        <source>Open the &amp;log folder</source>
        <translation>打开记录文件夹(&amp;L)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="69"/>
        <source>Open the folder with the log of what the assistant did</source>
        <translation>打开记录本助手所做操作的日志文件夹</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="82"/>
        <source>undone</source>
        <translation>已撤销</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="83"/>
        <source>Changes made on the demo computer:</source>
        <translation>在演示电脑上做的更改：</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="84"/>
        <source>Changes made on the copied drive:</source>
        <translation>在复制出来的磁盘上做的更改：</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="85"/>
        <source>Changes made on this computer:</source>
        <translation>在这台电脑上做的更改：</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="87"/>
        <source>&lt;p&gt;{heading}&lt;/p&gt;&lt;ul&gt;{items}&lt;/ul&gt;&lt;p&gt;They were undone: everything they changed is back as it was.&lt;/p&gt;</source>
        <translation>&lt;p&gt;{heading}&lt;/p&gt;&lt;ul&gt;{items}&lt;/ul&gt;&lt;p&gt;它们都已撤销：改动过的一切都已恢复原样。&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="90"/>
        <source>&lt;p&gt;{heading}&lt;/p&gt;&lt;ul&gt;{items}&lt;/ul&gt;&lt;p&gt;Each one is recorded; “Undo these changes” puts everything back as it was, except Microsoft&apos;s Visual C++ runtime: it stays installed because other programs share it. Later, “See earlier repairs” on the first page undoes them too.&lt;/p&gt;</source>
        <translation>&lt;p&gt;{heading}&lt;/p&gt;&lt;ul&gt;{items}&lt;/ul&gt;&lt;p&gt;每一项都有记录；“撤销这些修改”会把一切恢复原样，但微软 Visual C++ 运行库除外：它会保持安装，因为其他程序也在使用它。以后也可以在第一页点“查看以前的修复”来撤销它们。&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="95"/>
        <source>&lt;p&gt;{heading}&lt;/p&gt;&lt;ul&gt;{items}&lt;/ul&gt;&lt;p&gt;Each one is recorded; “Undo these changes” puts everything back as it was. Later, “See earlier repairs” on the first page undoes them too.&lt;/p&gt;</source>
        <translation>&lt;p&gt;{heading}&lt;/p&gt;&lt;ul&gt;{items}&lt;/ul&gt;&lt;p&gt;每一项都有记录；“撤销这些修改”会把一切恢复原样。以后也可以在第一页点“查看以前的修复”来撤销它们。&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="100"/>
        <source>Nothing needed repairing: PyTorch should load. Nothing was changed.</source>
        <translation>没有需要修复的内容：PyTorch 应该可以加载。没有做任何修改。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="102"/>
        <source>Nothing was changed on the demo computer.</source>
        <translation>演示电脑上没有做任何更改。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="103"/>
        <source>Nothing was changed on the copied drive.</source>
        <translation>复制出来的磁盘上没有做任何更改。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="104"/>
        <source>Nothing was changed on this computer.</source>
        <translation>这台电脑上没有做任何修改。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="119"/>
        <source>&lt;p&gt;&lt;b&gt;Still to do, by you.&lt;/b&gt; These steps fix what this program cannot change. Follow them, then run Torch DLL Doctor again.&lt;/p&gt;</source>
        <translation>&lt;p&gt;&lt;b&gt;还需要你自己完成。&lt;/b&gt;这些步骤能解决本程序无法修改的问题。请按步骤操作，然后再运行一次 Torch DLL Doctor。&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="186"/>
        <source>The log folder is opening: {folder}</source>
        <translation>正在打开日志文件夹：{folder}</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="188"/>
        <source>The log folder</source>
        <translation>日志文件夹</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="189"/>
        <source>No file manager could be opened here. The log is in this folder:
{folder}</source>
        <translation>这里无法打开文件管理器。日志在这个文件夹中：
{folder}</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="191"/>
        <source>&amp;Copy</source>
        <translation>复制(&amp;C)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/finish.py" line="193"/>
        <source>The log is in this folder: {folder}</source>
        <translation>日志在这个文件夹中：{folder}</translation>
    </message>
</context>
<context>
    <name>HistoryPage</name>
    <message>
        <location filename="../../app/ui/pages/history.py" line="64"/>
        <source>The record of earlier repairs could not be read.</source>
        <translation>无法读取以前修复的记录。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="71"/>
        <source>Earlier repairs</source>
        <translation>以前的修复</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="72"/>
        <source>Every repair made here is recorded, and each one still in place can be undone.</source>
        <translation>这里做过的每次修复都有记录，仍然有效的修复都可以撤销。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="75"/>
        <source>Reading the record of repairs…</source>
        <translation>正在读取修复记录…</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="77"/>
        <source>No repair has been made here yet.</source>
        <translation>这里还没有做过修复。</translation>
    </message>
    <message numerus="yes">
        <location filename="../../app/ui/pages/history.py" line="79"/>
        <source>%n repair(s) recorded here.</source>
        <translation>
            <numerusform>这里记录了 %n 次修复。</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <location filename="../../app/ui/pages/history.py" line="80"/>
        <source>%n of them still in place.</source>
        <translation>
            <numerusform>其中 %n 次仍然有效。</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="95"/>
        <source>Still in place.</source>
        <translation>仍然有效。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="96"/>
        <source>Undone: what it changed is back as it was.</source>
        <translation>已撤销：它改动的内容已恢复原样。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="97"/>
        <source>Its undo stopped, and it was kept as it is.</source>
        <translation>它的撤销已停止，并按现状保留。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="98"/>
        <source>Its undo could not finish: the first page offers to try again.</source>
        <translation>它的撤销没能完成：第一页可以再试一次。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="99"/>
        <source>It did not finish: the first page offers to roll it back.</source>
        <translation>它没有完成：第一页可以把它回滚。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="100"/>
        <source>It is running in another window now.</source>
        <translation>它正在另一个窗口中运行。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="109"/>
        <source>{name} — {when}</source>
        <translation>{name} — {when}</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="114"/>
        <source>&lt;p&gt;What it changed:&lt;/p&gt;&lt;ul&gt;{changes}&lt;/ul&gt;</source>
        <translation>&lt;p&gt;它改动了什么：&lt;/p&gt;&lt;ul&gt;{changes}&lt;/ul&gt;</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="119"/>
        <source>&amp;Undo…</source>
        <translation>撤销(&amp;U)…</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="119"/>
        <source>Undo {name}</source>
        <translation>撤销 {name}</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="132"/>
        <source>Undo this repair?</source>
        <translation>撤销这次修复？</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="133"/>
        <source>&lt;p&gt;Undo “{name}” of {when}?&lt;/p&gt;&lt;p&gt;Everything it changed goes back to how it was before:&lt;/p&gt;&lt;ul&gt;{lines}&lt;/ul&gt;</source>
        <translation>&lt;p&gt;撤销 {when} 的“{name}”吗？&lt;/p&gt;&lt;p&gt;它改动的一切都会恢复成原来的样子：&lt;/p&gt;&lt;ul&gt;{lines}&lt;/ul&gt;</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="140"/>
        <source>&amp;Undo it</source>
        <translation>撤销(&amp;U)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="140"/>
        <source>Undo this repair</source>
        <translation>撤销这次修复</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/history.py" line="149"/>
        <source>Undoing…</source>
        <translation>正在撤销…</translation>
    </message>
</context>
<context>
    <name>Icons</name>
    <message>
        <location filename="../../app/ui/pages/base.py" line="175"/>
        <source>Fine: nothing wrong was found here.</source>
        <translation>正常：这里没有发现问题。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/base.py" line="176"/>
        <source>A problem: this stops PyTorch from loading.</source>
        <translation>问题：它导致 PyTorch 无法加载。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/base.py" line="177"/>
        <source>A warning: worth a look, though PyTorch may still load.</source>
        <translation>警告：值得看一看，不过 PyTorch 可能仍能加载。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/base.py" line="178"/>
        <source>For your information: nothing to do about it.</source>
        <translation>供你参考：不需要做什么。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/base.py" line="179"/>
        <source>Under way.</source>
        <translation>正在进行。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/base.py" line="180"/>
        <source>Not started, or nothing to do.</source>
        <translation>还没开始，或者不需要做什么。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/base.py" line="181"/>
        <source>Could not be checked completely.</source>
        <translation>没能完整检查。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/base.py" line="182"/>
        <source>Found only through the PATH setting, Windows&apos; last resort.</source>
        <translation>只是通过 PATH 设置找到的，这是 Windows 最后才会查找的地方。</translation>
    </message>
</context>
<context>
    <name>PlanPage</name>
    <message>
        <location filename="../../app/ui/pages/plan.py" line="113"/>
        <source>Choose the repair</source>
        <translation>选择修复方式</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/plan.py" line="114"/>
        <source>Nothing has changed yet. Every change below is recorded and can be undone.</source>
        <translation>目前还没有任何修改。下面的每一项修改都会被记录，并且可以撤销。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/plan.py" line="115"/>
        <source>&amp;Repair now</source>
        <translation>立即修复(&amp;R)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/plan.py" line="118"/>
        <source>Working out the repairs that fit…</source>
        <translation>正在找出合适的修复方式…</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/plan.py" line="120"/>
        <source>The repairs could not be worked out. {reason} Press Next to finish and save the report.</source>
        <translation>无法确定可用的修复。{reason} 请按“下一步”结束并保存报告。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/plan.py" line="123"/>
        <source>None of the repairs can be done here. The reasons are below. Press Next to finish and save the report.</source>
        <translation>这里无法进行任何修复，原因见下。请按“下一步”结束并保存报告。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/plan.py" line="126"/>
        <source>Nothing here can be repaired automatically, but there are steps you can take yourself. They are below, and they stay on the last page. Press Next.</source>
        <translation>这里没有能自动完成的修复，但有一些你可以自己完成的步骤。步骤见下，最后一页上也会保留。请按“下一步”。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/plan.py" line="129"/>
        <source>The recommended repair is chosen for each problem. Press “Repair now” when you are ready.</source>
        <translation>每个问题都已选好推荐的修复方式。准备好后点击“立即修复”。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/plan.py" line="161"/>
        <source>Not possible here: {reasons}</source>
        <translation>这里无法进行：{reasons}</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/plan.py" line="166"/>
        <source>Leave this as it is</source>
        <translation>保持原样</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/plan.py" line="167"/>
        <source>Leave this problem as it is</source>
        <translation>这个问题保持原样</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/plan.py" line="183"/>
        <source>Download: about {size} MB.</source>
        <translation>需要下载：约 {size} MB。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/plan.py" line="185"/>
        <source>Download: a small file from your package index.</source>
        <translation>需要下载：从你的软件包索引下载一个小文件。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/plan.py" line="187"/>
        <source>Windows will ask for permission (administrator rights) for this step.</source>
        <translation>这一步 Windows 会请求权限（管理员权限）。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/plan.py" line="189"/>
        <source>No administrator rights are needed.</source>
        <translation>不需要管理员权限。</translation>
    </message>
</context>
<context>
    <name>QFileDialog</name>
    <message>
        <location filename="../../app/ui/wizard.py" line="38"/>
        <source>&amp;Look in:</source>
        <translation>查找范围(&amp;L)：</translation>
    </message>
    <message>
        <location filename="../../app/ui/wizard.py" line="39"/>
        <source>Files of &amp;type:</source>
        <translation>文件类型(&amp;T)：</translation>
    </message>
</context>
<context>
    <name>RepairPage</name>
    <message>
        <location filename="../../app/ui/pages/repair.py" line="104"/>
        <source>Repairing</source>
        <translation>正在修复</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/repair.py" line="105"/>
        <source>Every change is recorded first, so it can be undone.</source>
        <translation>每一项修改都会先被记录，所以可以撤销。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/repair.py" line="106"/>
        <source>S&amp;top and roll back</source>
        <translation>停止并恢复(&amp;T)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/repair.py" line="106"/>
        <source>Stop the repair and put everything back</source>
        <translation>停止修复并把一切恢复原样</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/repair.py" line="107"/>
        <source>Show &amp;details</source>
        <translation>显示详情(&amp;D)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/repair.py" line="107"/>
        <source>Show the log of the repair</source>
        <translation>显示修复日志</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/repair.py" line="108"/>
        <source>Log of the repair</source>
        <translation>修复日志</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/repair.py" line="109"/>
        <source>&amp;Retry</source>
        <translation>重试(&amp;R)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/repair.py" line="110"/>
        <source>S&amp;kip this repair</source>
        <translation>跳过这项修复(&amp;K)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/repair.py" line="111"/>
        <source>Roll &amp;back everything</source>
        <translation>全部恢复(&amp;B)</translation>
    </message>
</context>
<context>
    <name>Report</name>
    <message>
        <location filename="../../app/ui/pages/base.py" line="64"/>
        <source>Save the report</source>
        <translation>保存报告</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/base.py" line="65"/>
        <source>Web page (*.html);;Text (*.txt);;JSON (*.json)</source>
        <translation>网页 (*.html);;文本 (*.txt);;JSON (*.json)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/base.py" line="76"/>
        <source>Report saved: {path}</source>
        <translation>报告已保存：{path}</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/base.py" line="78"/>
        <source>The report could not be saved. {reason}</source>
        <translation>报告没能保存。{reason}</translation>
    </message>
</context>
<context>
    <name>TechnicalDetailsWindow</name>
    <message>
        <location filename="../../app/ui/pages/tree.py" line="220"/>
        <source>Technical details: the DLLs PyTorch loads</source>
        <translation>技术细节：PyTorch 加载的 DLL</translation>
    </message>
</context>
<context>
    <name>Undo</name>
    <message>
        <location filename="../../app/ui/pages/base.py" line="93"/>
        <source>Undone: every file and setting the repairs changed is back as it was, except Microsoft&apos;s Visual C++ runtime, now installed ({runtimes}): it stays because other programs share it.</source>
        <translation>已撤销：修复改动的每个文件和设置都已恢复原样，但微软 Visual C++ 运行库除外，它现在已安装（{runtimes}）：它会保留，因为其他程序也在使用它。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/base.py" line="97"/>
        <source>Undone: every file and setting is back as it was. As before the repair, PyTorch does not load.</source>
        <translation>已撤销：所有文件和设置都已恢复原样。和修复前一样，PyTorch 无法加载。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/base.py" line="99"/>
        <source>Undone: every file and setting is back as it was.</source>
        <translation>已撤销：所有文件和设置都已恢复原样。</translation>
    </message>
</context>
<context>
    <name>VerifyPage</name>
    <message>
        <location filename="../../app/ui/pages/verify.py" line="57"/>
        <source>Checking PyTorch again</source>
        <translation>再次检查 PyTorch</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/verify.py" line="58"/>
        <source>The same checks as before, now that the repairs are done.</source>
        <translation>修复完成后，重新进行和之前相同的检查。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/verify.py" line="65"/>
        <source>Checking…</source>
        <translation>正在检查…</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/verify.py" line="66"/>
        <source>The check did not finish.</source>
        <translation>检查没有完成。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/verify.py" line="73"/>
        <source>The same checks again, after the undo.</source>
        <translation>撤销之后，再做一次同样的检查。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/verify.py" line="76"/>
        <source>The repairs were undone. As before them, PyTorch {version} does not load.</source>
        <translation>修复已撤销。和修复前一样，PyTorch {version} 无法加载。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/verify.py" line="78"/>
        <source>The repairs were undone: everything is back as it was.</source>
        <translation>修复已撤销：一切都已恢复原样。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/verify.py" line="79"/>
        <source>To repair it again, start the assistant again and choose a repair.</source>
        <translation>如果要再次修复，请重新启动本助手并选择一个修复方法。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/verify.py" line="83"/>
        <source>Some checks could not finish, so it is not known yet whether PyTorch {version} loads now.</source>
        <translation>有些检查没能完成，所以还不知道 PyTorch {version} 现在能否加载。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/verify.py" line="86"/>
        <source>&lt;p&gt;Not finished: {checks}.&lt;/p&gt;&lt;p&gt;The checks that did finish found nothing still wrong. Check again in a minute by starting the assistant again: security software scanning the new files can slow PyTorch&apos;s first start. If a check keeps failing, save the report on the next page and share it.&lt;/p&gt;</source>
        <translation>&lt;p&gt;没能完成：{checks}。&lt;/p&gt;&lt;p&gt;已完成的检查没有发现仍然存在的问题。请过一分钟重新启动本助手再检查一次：安全软件扫描新文件可能会让 PyTorch 第一次启动变慢。如果某项检查一直失败，请在下一页保存报告并发给帮助你的人。&lt;/p&gt;</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/verify.py" line="95"/>
        <source>PyTorch {version} loads now.</source>
        <translation>PyTorch {version} 现在可以加载了。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/verify.py" line="96"/>
        <source>PyTorch {version} should load now: every file it needs is in place.</source>
        <translation>PyTorch {version} 现在应该可以加载：它需要的文件都已就位。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/verify.py" line="98"/>
        <source>Start your AI app again. If it still fails, save the report on the next page and share it.</source>
        <translation>请重新启动你的 AI 应用。如果仍然失败，请在下一页保存报告并分享。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/verify.py" line="102"/>
        <source>PyTorch {version} still does not load.</source>
        <translation>PyTorch {version} 仍然无法加载。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/verify.py" line="106"/>
        <source>&lt;p&gt;Still wrong:&lt;/p&gt;&lt;ul&gt;{titles}&lt;/ul&gt;&lt;p&gt;What to try next: start the assistant again and choose another repair; or make a fresh environment for your AI app (a new venv with &lt;code&gt;pip install torch&lt;/code&gt;); or run PyTorch inside WSL, where these Windows DLLs are not used.&lt;/p&gt;</source>
        <translation>&lt;p&gt;仍然存在的问题：&lt;/p&gt;&lt;ul&gt;{titles}&lt;/ul&gt;&lt;p&gt;接下来可以尝试：重新运行助手并选择另一种修复方式；或者为你的 AI 应用新建一个环境（新建 venv 后运行 &lt;code&gt;pip install torch&lt;/code&gt;）；或者在 WSL 中运行 PyTorch，那里不会用到这些 Windows DLL。&lt;/p&gt;</translation>
    </message>
</context>
<context>
    <name>WelcomePage</name>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="103"/>
        <source>The choice to keep it could not be recorded. Try again, or go on: nothing was changed.</source>
        <translation>无法记录“保持原样”的选择。请再试一次，或者继续：没有做任何改动。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="105"/>
        <source>The record of earlier repairs could not be read. Go on: the checks work all the same.</source>
        <translation>无法读取之前修复的记录。请继续：检查照常进行。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="126"/>
        <source>Welcome to Torch DLL Doctor</source>
        <translation>欢迎使用 Torch DLL Doctor</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="127"/>
        <source>Find out why PyTorch does not start on this computer, and fix it.</source>
        <translation>找出 PyTorch 在这台电脑上无法启动的原因，并修复它。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="129"/>
        <source>When PyTorch stops with an error such as “WinError 126 … fbgemm.dll”, a file it needs is missing or wrong. This assistant finds your Python installations, checks each file PyTorch loads, and tells you in plain words what is wrong.</source>
        <translation>当 PyTorch 因“WinError 126 … fbgemm.dll”之类的错误停止时，说明它需要的某个文件缺失或不对。这个助手会找到你的 Python 安装，检查 PyTorch 加载的每个文件，并用通俗的话告诉你哪里出了问题。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="133"/>
        <source>Nothing on your computer changes unless you agree. Every change is recorded and can be undone.</source>
        <translation>未经你同意，电脑上的任何东西都不会被修改。每一项修改都有记录，并且可以撤销。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="134"/>
        <source>&amp;Language:</source>
        <translation>语言(&amp;L)：</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="135"/>
        <source>Language</source>
        <translation>语言</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="136"/>
        <source>&amp;Optional: paste the error message you saw, and we explain it at once:</source>
        <translation>可选：粘贴你看到的错误信息，我们会立即解释(&amp;O)：</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="137"/>
        <source>For example: OSError: [WinError 126] … Error loading “…\torch\lib\fbgemm.dll” or one of its dependencies.</source>
        <translation>例如：OSError: [WinError 126] … Error loading “…\torch\lib\fbgemm.dll” or one of its dependencies.</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="139"/>
        <source>The error message you saw</source>
        <translation>你看到的错误信息</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="140"/>
        <source>&amp;Roll back now</source>
        <translation>立即恢复(&amp;R)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="140"/>
        <source>Roll back the unfinished repair</source>
        <translation>恢复未完成的修复</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="141"/>
        <source>&amp;Keep it as it is</source>
        <translation>保持现状(&amp;K)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="141"/>
        <source>Leave the unfinished repair as it is and stop offering to roll it back</source>
        <translation>让未完成的修复保持现状，不再提示回滚</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="143"/>
        <source>See &amp;earlier repairs</source>
        <translation>查看以前的修复(&amp;E)</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="143"/>
        <source>See the earlier repairs, and undo one</source>
        <translation>查看以前的修复，并撤销其中一个</translation>
    </message>
    <message numerus="yes">
        <location filename="../../app/ui/pages/welcome.py" line="151"/>
        <source>%n repair(s) were made here before.</source>
        <translation>
            <numerusform>这里以前做过 %n 次修复。</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <location filename="../../app/ui/pages/welcome.py" line="152"/>
        <source>%n of them still in place: each can be undone.</source>
        <translation>
            <numerusform>其中 %n 次仍然有效：每次都可以撤销。</numerusform>
        </translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="167"/>
        <source>The error message could not be explained here. Go on: the checks find the cause all the same.</source>
        <translation>这里没能解释这条错误信息。请继续：检查同样能找到原因。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="179"/>
        <source>&lt;b&gt;{title}&lt;/b&gt;&lt;br&gt;This usually means: {explanation}&lt;br&gt;What helps: {action}</source>
        <translation>&lt;b&gt;{title}&lt;/b&gt;&lt;br&gt;这通常意味着：{explanation}&lt;br&gt;解决办法：{action}</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="198"/>
        <source>The interrupted repair was rolled back: the files and settings it changed are as they were before. Not put back: {names}, whose undo stopped earlier and stays as it left things.</source>
        <translation>中断的修复已回滚：它改动过的文件和设置都已恢复原样。没有恢复的是：{names}，它的撤销之前已经停止，仍保持当时的样子。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="202"/>
        <source>The unfinished repair was rolled back: the files and settings it changed are as they were before, except Microsoft&apos;s Visual C++ runtime, now installed ({runtimes}): it stays because other programs share it.</source>
        <translation>未完成的修复已回滚：它改动的文件和设置都已恢复原样，但微软 Visual C++ 运行库除外，它现在已安装（{runtimes}）：它会保留，因为其他程序也在使用它。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="207"/>
        <source>The unfinished repair was rolled back: every file and setting is as it was before.</source>
        <translation>未完成的修复已恢复：所有文件和设置都和之前一样。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="210"/>
        <source>The unfinished repair could not be rolled back completely: {reason}</source>
        <translation>未完成的修复没能完全回滚：{reason}</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="213"/>
        <source>A repair is running in another window right now. Wait until it has finished before you repair anything here.</source>
        <translation>另一个窗口正在进行修复。请等它完成后，再在这里修复。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="219"/>
        <source>A repair did not finish: “{name}”, started {when}. The assistant or the computer stopped before it was done. Roll it back to put every file and setting as it was.</source>
        <translation>有一个修复没有完成：“{name}”，开始于 {when}。本助手或电脑在它完成之前停止了。回滚它，就能把每个文件和设置恢复原样。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="223"/>
        <source>Undoing “{name}” (started {when}) could not put everything back: {reason} Nothing more can be put back by the assistant; keep it as it is, or put it right by hand.</source>
        <translation>撤销“{name}”（开始于 {when}）没能恢复全部内容：{reason} 本助手无法再恢复更多内容；请保持现状，或者手动改正。</translation>
    </message>
    <message>
        <location filename="../../app/ui/pages/welcome.py" line="228"/>
        <source>Undoing “{name}” (started {when}) could not finish: {reason} Close the programs that use PyTorch, then roll it back again.</source>
        <translation>撤销“{name}”（开始于 {when}）没能完成：{reason} 请关闭正在使用 PyTorch 的程序，然后再回滚一次。</translation>
    </message>
</context>
</TS>
